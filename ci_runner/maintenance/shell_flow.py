"""Which commands of a workflow step's shell script run: the commands, each with a verdict.

GitHub runs a ``run:`` script with ``bash -e`` (``sh -e`` without bash), so an ordinary command
that fails fails the step, visibly. What is *proven* to run is therefore every command reached
in sequence (``;``, newlines, ``|``, ``&``, and ``&&`` after an ordinary command). A command
proven *never* to run: a comment, the data of a heredoc, an argument (``echo python
run_suite.py``), one after ``exit`` at the top of the script, after ``true ||``, ``false &&``
or ``! true &&``, in the body of ``if false``/``while false``/the ``else`` of ``if true``. A
command that *may* not run is one the script runs only on a condition this reader cannot decide
(``cmd || python run_suite.py``, after a test such as ``[ -n "$X" ] &&``, inside a shell ``if``,
``case``, loop or function, after an ``exit`` that may happen); its verdict says why.

Command substitutions (``$(...)``, backquotes), ``bash -c '...'`` and a heredoc fed to a shell
(``bash <<EOF``) are scripts of their own, read with the verdict of the command holding them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

RUNS, MAY, NEVER = "runs", "may not run", "never runs"
_ORDER = {RUNS: 0, MAY: 1, NEVER: 2}
SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
_OPERATORS = ("&&", "||", ";;", "|&", ";", "&", "|", "(", ")")
_TRUE, _FALSE, _EXIT, _TEST, _OTHER = "true", "false", "exit", "test", "other"
_HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_0-9.-]+)\2")
MAX_DEPTH = 20  # scripts inside scripts ($(...) in bash -c '...' in ...)


@dataclass(frozen=True)
class Verdict:
    """Whether a command runs, and why not when it may not or never does."""

    runs: str = RUNS
    why: str = ""

    def then(self, other: Verdict) -> Verdict:
        """The stronger of the two (never over may over runs), with its reason."""
        return other if _ORDER[other.runs] > _ORDER[self.runs] else self


PROVEN = Verdict()  # runs


@dataclass(frozen=True)
class Command:
    """One simple command: its words as written (quotes kept), 1-based line, and verdict."""

    words: tuple[str, ...]
    line: int
    verdict: Verdict

    @property
    def text(self) -> str:
        return " ".join(self.words)


@dataclass
class _Token:
    kind: str  # "word", "op", "newline"
    text: str
    line: int
    nested: list[str] = field(default_factory=list)  # command substitutions inside a word
    heredoc: tuple[str, str, int] | None = None  # (body, delimiter, first line) read after it


class ShellSyntaxError(ValueError):
    """The script cannot be read as shell (an unclosed quote or substitution)."""


def _skip_quoted(text: str, pos: int, nested: list[str]) -> int:
    """The index after the quoted part, substitution or escape that starts at ``pos``."""
    char = text[pos]
    if char == "\\":
        return pos + 2
    if char == "'":
        end = text.find("'", pos + 1)
        if end < 0:
            raise ShellSyntaxError("an unclosed ' quote")
        return end + 1
    if char == '"':
        pos += 1
        while pos < len(text) and text[pos] != '"':
            if text[pos] == "\\":
                pos += 2
            elif text.startswith("$(", pos) or text[pos] == "`":
                pos = _skip_quoted(text, pos, nested)
            else:
                pos += 1
        if pos >= len(text):
            raise ShellSyntaxError('an unclosed " quote')
        return pos + 1
    if char == "`":
        end = text.find("`", pos + 1)
        if end < 0:
            raise ShellSyntaxError("an unclosed ` substitution")
        nested.append(text[pos + 1 : end])
        return end + 1
    # "$(" or "${": to the matching closer, quotes inside skipped
    opener, closer = text[pos + 1], ")" if text[pos + 1] == "(" else "}"
    arithmetic = text.startswith("$((", pos)
    depth, start, pos = 1, pos + 2, pos + 2
    while pos < len(text) and depth:
        if text[pos] in "'\"`\\" or text.startswith("$(", pos):
            pos = _skip_quoted(text, pos, [])
            continue
        depth += {opener: 1, closer: -1}.get(text[pos], 0)
        pos += 1
    if depth:
        raise ShellSyntaxError(f"an unclosed ${opener} substitution")
    if opener == "(" and not arithmetic:
        nested.append(text[start : pos - 1])
    return pos


def _heredoc_body(script: str, pos: int, delimiter: str, strip: bool) -> tuple[str, int]:
    """The body of a heredoc starting at ``pos`` and the index after its delimiter line."""
    end = pos
    while end < len(script):
        line_end = script.find("\n", end)
        line_end = len(script) if line_end < 0 else line_end
        text = script[end:line_end]
        if (text.lstrip("\t") if strip else text) == delimiter:
            return script[pos:end], min(line_end + 1, len(script))
        end = line_end + 1
    return script[pos:], len(script)  # unterminated: bash reads to the end too


def tokens(script: str) -> list[_Token]:
    """The script's words and operators; comments, continuations and heredoc bodies consumed
    (a heredoc's body is kept on the word before its ``<<``)."""
    found: list[_Token] = []
    pending: list[tuple[_Token, str, bool]] = []  # (word, delimiter, strip tabs)
    pos, line = 0, 1
    while pos < len(script):
        char = script[pos]
        if script.startswith("\\\n", pos):
            pos, line = pos + 2, line + 1
        elif char in " \t\r\f\v":
            pos += 1
        elif char == "\n":
            found.append(_Token("newline", "\n", line))
            pos, line = pos + 1, line + 1
            for word, delimiter, strip in pending:  # the bodies start on the next line
                body, after = _heredoc_body(script, pos, delimiter, strip)
                word.heredoc = (body, delimiter, line)
                line += script.count("\n", pos, after)
                pos = after
            pending = []
        elif char == "#":
            end = script.find("\n", pos)
            pos = len(script) if end < 0 else end
        elif script.startswith("<<", pos) and not script.startswith("<<<", pos):
            match = _HEREDOC.match(script, pos)
            words = [token for token in found if token.kind == "word"]
            if match is None or not words:
                raise ShellSyntaxError(f"a heredoc without a delimiter or a command (line {line})")
            pending.append((words[-1], match.group(3), match.group(1) == "-"))
            pos = match.end()
        elif char in "<>" and not script.startswith("(", pos + 1):
            pos += 1  # a redirection: its target is read as a word, never a command
            while pos < len(script) and script[pos] in "<>&|":
                pos += 1
            found.append(_Token("op", "redirect", line))
        elif operator := next((op for op in _OPERATORS if script.startswith(op, pos)), None):
            found.append(_Token("op", operator, line))
            pos += len(operator)
        else:
            start, nested = pos, []
            while pos < len(script) and (
                script[pos] not in " \t\r\n\f\v;&|()<>" or script.startswith(("<(", ">("), pos)
            ):
                if script[pos] in "'\"`\\" or script.startswith(("$(", "${", "<(", ">("), pos):
                    pos = _skip_quoted(script, pos, nested)
                else:
                    pos += 1
            word = script[start:pos]
            if word.isdigit() and script.startswith(("<", ">"), pos):
                continue  # the file descriptor of a redirection (2>&1)
            found.append(_Token("word", word, line, nested))
            line += word.count("\n")
    return found


def _unquoted(word: str) -> str:
    return re.sub(r"""\\(.)|['"]""", lambda m: m.group(1) or "", word)


@dataclass
class _Frame:
    verdict: Verdict  # of the commands of this block
    kind: str = "group"  # "top", "group", "subshell", "if", "loop", "case", "function"
    negate: bool = False  # until: the body runs while the condition fails
    cond: str = _OTHER  # the kind of the condition of the if just read
    exited: Verdict = field(default_factory=Verdict)  # after an exit in this block
    pattern: bool = False  # case: a pattern comes next

    def __post_init__(self) -> None:
        self.entry = self.verdict  # of the block's start: an if's condition, its else


def _unwound(ended: _Frame) -> Verdict:
    """What an exit inside a block that ended means for the commands after the block."""
    if ended.kind == "subshell" or ended.exited.runs == RUNS:
        return Verdict()
    if ended.kind == "group":
        return ended.exited
    return Verdict(MAY, ended.exited.why)


class _Reader:
    def __init__(self, depth: int, offset: int) -> None:
        self.commands: list[Command] = []
        self.depth = depth
        self.offset = offset  # lines before the script in the step (nested scripts)
        self.frames: list[_Frame] = []
        self.previous: tuple[str, Verdict] | None = None  # the command before && / || / |
        self.operator = ""
        self.last = _OTHER  # the kind of the last and-or list (an if's condition)

    def read(self, script: str, outer: Verdict) -> None:
        found = tokens(script)
        self.frames = [_Frame(outer, "top")]
        words: list[_Token] = []
        index = 0
        while index < len(found):
            token = found[index]
            frame = self.frames[-1]
            if token.kind == "word" and not words:
                if frame.kind == "case" and frame.pattern:  # up to the pattern's ")"
                    while index < len(found) and found[index].text != ")":
                        index += 1
                    frame.pattern = False
                    index += 1
                    continue
                skip = self.keyword(_unquoted(token.text), found, index)
                if skip:
                    index += skip
                    continue
            if token.kind == "word":
                words.append(token)
            elif token.text == "redirect":
                index += 1  # skip its target
            elif token.text == "(" and not words:
                self.frames.append(_Frame(self.now(), "subshell"))
            elif token.text == ")" and not words and len(self.frames) > 1:
                self.close()
            else:
                self.finish(words)
                words = []
                if token.text in ("&&", "||", "|", "|&"):
                    self.operator = "|" if token.text == "|&" else token.text
                else:
                    self.operator, self.previous = "", None
                    if token.text == ";;" and frame.kind == "case":
                        frame.pattern = True
                    if token.text == ")" and len(self.frames) > 1:
                        self.close()
            index += 1
        self.finish(words)

    def now(self) -> Verdict:
        """The verdict of a command starting here."""
        frame = self.frames[-1]
        base = frame.verdict.then(frame.exited)
        if self.previous is None or self.operator not in ("&&", "||", "|"):
            return base
        kind, before = self.previous
        if self.operator == "|":
            return before
        if self.operator == "&&":
            if kind in (_FALSE, _EXIT):
                return Verdict(NEVER, "after a command that always fails, and `&&`")
            if kind == _TEST:
                return before.then(Verdict(MAY, "it runs only if the test before `&&` holds"))
            return before
        if kind == _TRUE:
            return Verdict(NEVER, "after a command that always succeeds, and `||`")
        if kind in (_FALSE, _EXIT):
            return before
        return before.then(Verdict(MAY, "it runs only if the command before `||` fails"))

    def close(self) -> None:
        ended = self.frames.pop()
        parent = self.frames[-1]
        parent.exited = parent.exited.then(_unwound(ended))
        self.previous, self.operator, self.last = None, "", _OTHER

    def keyword(self, word: str, found: list[_Token], index: int) -> int:
        """Handle a reserved word starting a command: the tokens it takes, 0 for other words."""
        frame = self.frames[-1]
        if word in ("if", "while", "until"):
            kind = "if" if word == "if" else "loop"
            self.frames.append(_Frame(self.now(), kind, negate=word == "until"))
            return 1
        if word in ("then", "do") and frame.kind in ("if", "loop") and frame.cond != "body":
            holds = {_TRUE: True, _FALSE: False, _EXIT: False}.get(self.last)
            if holds is not None and frame.negate:
                holds = not holds
            frame.cond = self.last
            what = "a shell if" if frame.kind == "if" else "a shell loop"
            frame.verdict = frame.entry.then(frame.exited)
            if holds is False:
                frame.verdict = Verdict(NEVER, f"in the body of {what} never entered")
            elif holds is None:
                frame.verdict = frame.verdict.then(
                    Verdict(MAY, f"inside {what}, on a condition not decided here")
                )
            self.previous, self.operator = None, ""
            return 1
        if word in ("else", "elif") and frame.kind == "if":
            frame.verdict = frame.entry.then(frame.exited)
            if frame.cond == _TRUE:
                frame.verdict = Verdict(NEVER, "in the else of a shell if that always holds")
            elif not (frame.cond in (_FALSE, _EXIT) and word == "else"):
                frame.verdict = frame.verdict.then(
                    Verdict(MAY, "inside a shell if, on a condition not decided here")
                )
            self.previous, self.operator = None, ""
            return 1
        if word in ("fi", "done", "esac") and len(self.frames) > 1:
            self.close()
            return 1
        if word in ("for", "select", "case"):
            kind = "case" if word == "case" else "loop"
            what = "a shell case" if word == "case" else "a shell loop"
            frame = _Frame(self.now().then(Verdict(MAY, f"inside {what}")), kind)
            frame.cond, frame.pattern = "body", word == "case"
            self.frames.append(frame)
            end = "in" if word == "case" else "do"
            taken = 1
            while index + taken < len(found) and _unquoted(found[index + taken].text) != end:
                taken += 1
            return taken + 1
        if word == "function" or self._defines_function(found, index):
            name = _unquoted(found[index + 1].text) if word == "function" else word
            why = f"inside function {name}, which runs only where it is called"
            self.frames.append(_Frame(self.now().then(Verdict(MAY, why)), "function"))
            taken = 2 if word == "function" else 1
            while index + taken < len(found) and found[index + taken].text in ("(", ")", "\n"):
                taken += 1
            if index + taken < len(found) and found[index + taken].text == "{":
                taken += 1
            return taken
        if word == "{":
            self.frames.append(_Frame(self.now(), "group"))
            return 1
        if word == "}" and len(self.frames) > 1:
            self.close()
            return 1
        return 0

    @staticmethod
    def _defines_function(found: list[_Token], index: int) -> bool:
        following = [token.text for token in found[index + 1 : index + 3]]
        return following == ["(", ")"]

    def finish(self, words: list[_Token]) -> None:
        if not words:
            return
        verdict = self.now()
        kind = self.command(words, verdict)
        if kind == _EXIT:
            self.exited(verdict, words[0].line)
        self.last = kind if self.operator == "" else _OTHER
        self.previous = (kind, verdict)

    def exited(self, verdict: Verdict, line: int) -> None:
        """After an ``exit``: the rest of its block never runs, or may not run when the exit
        is conditional (``cmd || exit 1`` exits only when a command fails: a broken job)."""
        if self.operator == "||" and self.previous and self.previous[0] == _OTHER:
            return
        shown = line + self.offset
        frame = self.frames[-1]
        if verdict.runs == RUNS and frame.kind in ("top", "group", "subshell"):
            after = Verdict(NEVER, f"after the `exit` on line {shown}")
        elif verdict.runs == NEVER:
            return
        else:
            after = Verdict(MAY, f"the script may exit before it (line {shown})")
        frame.exited = frame.exited.then(after)

    def command(self, words: list[_Token], verdict: Verdict) -> str:
        """Record one simple command (and the scripts inside it); return its kind."""
        texts = tuple(token.text for token in words)
        line = words[0].line + self.offset
        self.commands.append(Command(texts, line, verdict))
        plain = [_unquoted(text) for text in texts]
        for token in words:
            for script in token.nested:
                self.nested(script, verdict, token.line + self.offset - 1)
            if token.heredoc is not None:
                self.heredoc(plain, token.heredoc, verdict)
        negate = plain[0] == "!"
        plain = plain[1:] if negate else plain
        head = plain[0].rsplit("/", 1)[-1] if plain else ""
        if head in SHELLS and "-c" in plain[1:]:
            position = plain.index("-c") + 1
            if position < len(plain):
                self.nested(plain[position], verdict, line - 1)
        kinds = {"true": _TRUE, ":": _TRUE, "false": _FALSE, "exit": _EXIT, "return": _EXIT}
        kind = kinds.get(head, _TEST if head in ("[", "[[", "test") else _OTHER)
        if head == "exec" and len(plain) > 1:
            kind = _EXIT  # exec COMMAND replaces the shell (exec > log only redirects)
        if negate:
            kind = {_TRUE: _FALSE, _FALSE: _TRUE, _EXIT: _EXIT}.get(kind, kind)
        return kind

    def heredoc(self, plain: list[str], heredoc: tuple[str, str, int], verdict: Verdict) -> None:
        """A heredoc is data, except for a shell reading its script from it."""
        head = plain[0].rsplit("/", 1)[-1] if plain else ""
        if head in SHELLS and all(word.startswith("-") and word != "-c" for word in plain[1:]):
            self.nested(heredoc[0], verdict, heredoc[2] + self.offset - 1)

    def nested(self, script: str, verdict: Verdict, offset: int) -> None:
        if self.depth >= MAX_DEPTH:
            raise ShellSyntaxError(f"scripts nested more than {MAX_DEPTH} deep")
        inner = _Reader(self.depth + 1, offset)
        inner.read(script, verdict)
        self.commands.extend(inner.commands)


def commands(script: str) -> list[Command]:
    """Every simple command of ``script`` with its verdict, in order (:class:`ShellSyntaxError`
    when it cannot be read)."""
    reader = _Reader(0, 0)
    try:
        reader.read(script, Verdict())
    except RecursionError:  # quotes and substitutions inside one another, thousands deep
        raise ShellSyntaxError("quotes or substitutions nested too deeply") from None
    return reader.commands
