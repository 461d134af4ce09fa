# -*- coding: utf-8 -*-
"""systemd quoting (plugins/module_utils/systemd_unit.py): ExecStart= words and env files.

Each rendering is read back with a small model of systemd's own parsers (specifiers, line
continuation, extract_first_word with EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE, $-expansion at exec
time; parse_env_file's quoting). The molecule scenario `serve` does the same round trip with
real systemd (the test double reports the argv and env it was started with).
"""

from __future__ import annotations

import re

import pytest

from ansible_collections.llmfleet.vllm.plugins.module_utils.systemd_unit import UnitError, env_file, exec_line, exec_word

CUNESCAPE = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\", '"': '"',
             "'": "'", "s": " "}


def systemd_specifiers(line):
    out, i = [], 0
    while i < len(line):
        if line[i] == "%":
            assert line[i + 1] == "%", "unexpected specifier %%%s" % line[i + 1]
            out.append("%")
            i += 2
        else:
            out.append(line[i])
            i += 1
    return "".join(out)


def systemd_words(value):
    """A model of config_parse_exec: continuation, specifiers, then word splitting with unquote+cunescape."""
    lines = value.split("\n")
    joined = ""
    for ln in lines:
        stripped = ln.strip()
        if stripped.startswith(("#", ";")) and joined:
            continue  # comment lines inside a continuation are dropped
        if ln.endswith("\\"):
            joined += ln[:-1] + " "
        else:
            joined += ln
    text = systemd_specifiers(joined)
    words, i, n = [], 0, len(text)
    while True:
        while i < n and text[i] in " \t":
            i += 1
        if i >= n:
            break
        if text[i] == ";" and (i + 1 == n or text[i + 1] in " \t"):
            raise AssertionError("unquoted ; separates commands")
        word, quote = [], None
        while i < n:
            c = text[i]
            if quote is None and c in " \t":
                break
            if c == "\\":
                nxt = text[i + 1]
                if nxt == "x":
                    word.append(chr(int(text[i + 2:i + 4], 16)))
                    i += 4
                    continue
                assert nxt in CUNESCAPE, "bad escape \\%s" % nxt
                word.append(CUNESCAPE[nxt])
                i += 2
                continue
            if quote is None and c in "\"'":
                quote = c
            elif c == quote:
                quote = None
            else:
                word.append(c)
            i += 1
        assert quote is None, "unterminated quote"
        words.append("".join(word))
    # exec time: $$ -> $, $NAME / ${NAME} would expand (none may remain)
    out = []
    for w in words:
        assert not re.search(r"(?<!\$)\$(?:\$\$)*[A-Za-z{]", w.replace("$$", "")), "unescaped $ in %r" % w
        out.append(w.replace("$$", "$"))
    return out


def systemd_env(text):
    """A model of parse_env_file for the lines env_file(fmt='systemd') writes."""
    env = {}
    for line in text.splitlines():
        if not line or line[0] in "#;":
            continue
        key, _eq, rest = line.partition("=")
        assert rest.startswith('"') and rest.endswith('"'), line
        body, value, i = rest[1:-1], [], 0
        while i < len(body):
            if body[i] == "\\":
                assert body[i + 1] in '"\\`$', line
                value.append(body[i + 1])
                i += 2
            else:
                assert body[i] != '"', "unescaped quote in %r" % line
                value.append(body[i])
                i += 1
        env[key] = "".join(value)
    return env


TRICKY = [
    "plain", "", " ", "two words", 'say "hi"', "it's", "back\\slash", "100%", "%n", "$HOME", "${HOME}", "$$",
    "a;b", ";", "#comment", "tab\there", "new\nline", "bell\x07", "{\"method\": \"mtp\", \"num_speculative_tokens\": 2}",
    "--compilation-config.mode=3", "ünïcödé", "end\\",
]


@pytest.mark.parametrize("word", TRICKY)
def test_exec_word_round_trip(word):
    assert systemd_words("/bin/x " + exec_word(word)) == ["/bin/x", word]


def test_exec_line_round_trip_single_and_multi_line():
    argv = ["/usr/bin/docker", "run", "--rm", "--name", "vllm-serve", "--gpus", "all", "--ipc=host", "-p", "8000:8000",
            "--env-file", "/etc/llmfleet/serve.env", "vllm/vllm-openai:v0.28.0", "Qwen/Qwen3.6-35B-A3B"] + \
        ["--chat-template", "{% for m in messages %}{{ m['content'] }} $x \"q\"{% endfor %}"] + \
        ["--speculative-config", '{"method":"mtp","num_speculative_tokens":2}', "--served-model-name", "a", "b"]
    assert systemd_words(exec_line(argv)) == argv
    multi = exec_line(argv, multiline=True, break_before=["vllm/vllm-openai:v0.28.0"])
    assert systemd_words(multi) == argv
    lines = multi.split("\n")
    assert lines[0] == "/usr/bin/docker run \\"
    assert "    vllm/vllm-openai:v0.28.0 Qwen/Qwen3.6-35B-A3B \\" in lines
    assert lines[-1] == "    --served-model-name a b"
    assert all(ln.endswith(" \\") for ln in lines[:-1])


def test_exec_line_quotes_percent_and_dollar():
    assert exec_line(["/bin/echo", "100%", "$HOME"]) == "/bin/echo 100%% $$HOME"
    assert exec_word("") == '""'
    assert exec_word("a b") == '"a b"'
    assert exec_word('x"y') == '"x\\"y"'
    assert exec_word("#x") == '"#x"'
    assert exec_word("\x01") == '"\\x01"'
    assert exec_word(8000) == "8000"


def test_exec_line_rejects_bad_input():
    with pytest.raises(UnitError, match="absolute path"):
        exec_line(["docker", "run"])
    with pytest.raises(UnitError, match="absolute path"):
        exec_line(["-/usr/bin/docker"])
    with pytest.raises(UnitError, match="non-empty list"):
        exec_line("/bin/sh -c x")
    with pytest.raises(UnitError, match="non-empty list"):
        exec_line([])
    with pytest.raises(UnitError, match="NUL"):
        exec_word("a\x00b")
    with pytest.raises(UnitError, match="string or a number"):
        exec_word(None)


def test_env_file_systemd_round_trip():
    env = dict(("K%d" % i, v) for i, v in enumerate(t for t in TRICKY if "\n" not in t))
    env.update(NUM=8, FLAG=True, EMPTY=None)
    text = env_file(env, header="managed by llmfleet.vllm\n\nsecrets inside")
    assert text.startswith("# managed by llmfleet.vllm\n#\n# secrets inside\n")
    got = systemd_env(text)
    want = dict((k, v) for k, v in env.items())
    want.update(NUM="8", FLAG="true", EMPTY="")
    assert got == want
    keys = [ln.split("=")[0] for ln in text.splitlines() if not ln.startswith("#")]
    assert keys == sorted(keys)


def test_env_file_docker_is_literal():
    text = env_file({"HF_TOKEN": "hf_abc$x\"y'", "B": "two words", "A": ""}, fmt="docker")
    assert text == "A=\nB=two words\nHF_TOKEN=hf_abc$x\"y'\n"


@pytest.mark.parametrize("fmt", ["systemd", "docker"])
def test_env_file_errors_never_show_values(fmt):
    with pytest.raises(UnitError) as exc:
        env_file({"HF_TOKEN": "hf_secret\nsecond"}, fmt=fmt)
    assert "hf_secret" not in str(exc.value) and "HF_TOKEN" in str(exc.value) and "newline" in str(exc.value)
    with pytest.raises(UnitError) as exc:
        env_file({"VLLM_API_KEY": ["sk-secret"]}, fmt=fmt)
    assert "sk-secret" not in str(exc.value)
    with pytest.raises(UnitError, match="valid variable name"):
        env_file({"BAD-NAME": "x"}, fmt=fmt)
    with pytest.raises(UnitError, match="format"):
        env_file({}, fmt="ini")
