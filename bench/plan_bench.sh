#!/usr/bin/env bash
# Copyright: (c) 2026, llmfleet contributors
# Apache License 2.0 (see LICENSE)
#
# bench/plan_bench.sh [N]   (issue 3 §7; N defaults to 1000)
#
# Generates an inventory of N hosts (bench/gen_inventory.py: mixed hardware, 10% in two-node
# replicas) under a temp dir, then times
#   1. ansible-playbook playbooks/plan.yml over it (plan files written into the temp dir), and
#   2. a play with one ansible.builtin.debug task per host (connection local, no facts),
# and prints both wall times and their ratio. Target: ratio <= 1.5, i.e. the resolver adds
# little to Ansible's own per-host cost. It measures; it is not a test: it exits 0 unless a
# run fails. Logs stay in the temp dir (printed) when KEEP=1, else the dir is removed.
set -euo pipefail

N="${1:-1000}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/.venv/bin"
if [ -x "$BIN/ansible-playbook" ]; then
  export PATH="$BIN:$PATH"
fi
command -v ansible-playbook >/dev/null || { echo "plan_bench: ansible-playbook not found (make setup)" >&2; exit 2; }
PY="$(command -v python3)"
[ -x "$BIN/python" ] && PY="$BIN/python"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/plan_bench.XXXXXX")"
if [ "${KEEP:-0}" != 1 ]; then
  trap 'rm -rf "$TMP"' EXIT
fi

export ANSIBLE_COLLECTIONS_PATH="$ROOT/.collections${ANSIBLE_COLLECTIONS_PATH:+:$ANSIBLE_COLLECTIONS_PATH}"
export ANSIBLE_HOME="$TMP/ansible-home"
export ANSIBLE_LOCAL_TEMP="$TMP/ansible-tmp"
export ANSIBLE_NOCOLOR=1
export ANSIBLE_RETRY_FILES_ENABLED=0
export ANSIBLE_PYTHON_INTERPRETER="$PY"

"$PY" "$ROOT/bench/gen_inventory.py" "$N" "$TMP/inventory"

cat > "$TMP/debug.yml" <<'EOF'
---
- name: Baseline | one debug task per host
  hosts: all
  connection: local
  gather_facts: false
  tasks:
    - name: Baseline | debug
      ansible.builtin.debug:
        msg: "{{ inventory_hostname }} {{ ansible_host }}"
EOF

now() { "$PY" -c 'import time; print("%.3f" % time.time())'; }

run_timed() {  # run_timed LOG cmd... -> prints seconds
  local log="$1"; shift
  local t0 t1
  t0="$(now)"
  if ! "$@" >"$log" 2>&1; then
    echo "plan_bench: failed: $* (log: $log)" >&2
    tail -n 40 "$log" >&2
    trap - EXIT
    exit 1
  fi
  t1="$(now)"
  "$PY" -c "print('%.1f' % ($t1 - $t0))"
}

echo "plan_bench: $N hosts, inventory $TMP/inventory"
plan_s="$(cd "$TMP" && run_timed "$TMP/plan.log" ansible-playbook -i "$TMP/inventory" "$ROOT/playbooks/plan.yml" \
          -e "vllm_plan_dir=$TMP/plan")"
debug_s="$(cd "$TMP" && run_timed "$TMP/debug.log" ansible-playbook -i "$TMP/inventory" "$TMP/debug.yml")"
planned="$(find "$TMP/plan" -name argv.json | wc -l)"
[ "$planned" -eq "$N" ] || echo "plan_bench: warning: $planned of $N hosts have plan files" >&2
"$PY" -c "p, d = $plan_s, $debug_s; print('plan: %.1f s, debug play: %.1f s, ratio %.2f (target <= 1.5)' % (p, d, p / d))"
[ "${KEEP:-0}" = 1 ] && echo "plan_bench: logs and plan files kept in $TMP"
exit 0
