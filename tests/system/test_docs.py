"""test_docs.py — the help the binary prints and the docs say the same. Every option of every
subcommand's --help (the commands `edged --help` lists, and modes such as `bench --codec` that a
help names as `edged CMD --MODE --help`) has a row in its doc table: docs/configuration.md for
serve (flag, variable and default, all three as `serve --help` prints them), docs/cli.md for the
others (the default where the help states one, and any EDGED_* variable it names); no doc row names
an option the binary lacks. Every table of README.md and docs/*.md renders (a header row with as
many cells before each delimiter row), the README's configuration rows are configuration.md's, the
command tables list the commands `edged --help` lists, and the man page carries every subcommand's
help (skipped, visibly, without help2man). No server is started; no GPU is needed.
Binary EDGED_BIN."""
import functools
import glob
import os
import re
import shutil
import subprocess

import pytest

from conftest import BIN, ROOT

CLI_MD = os.path.join("docs", "cli.md")
CONFIG_MD = os.path.join("docs", "configuration.md")
# Options every command takes, and the top-level --version a help may mention.
ANY_COMMAND = {"help", "version"}
DELIMITER = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)+\|?\s*$")


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def edged_help(*args):
    p = subprocess.run([BIN, *args, "--help"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and p.stdout.startswith("usage"), "edged %s --help: exit %d\n%s%s" % (
        " ".join(args), p.returncode, p.stdout, p.stderr)
    return p.stdout


@functools.lru_cache(maxsize=None)
def commands():
    """The commands `edged --help` lists, in its order."""
    names = re.findall(r"^  ([a-z]+)  ", edged_help(), re.M)
    assert len(names) >= 7, edged_help()
    return tuple(names)


@functools.lru_cache(maxsize=None)
def helps():
    """{(command,) or (command, --mode): its --help text} for every command and mode."""
    out = {}
    for cmd in commands():
        text = out[(cmd,)] = edged_help(cmd)
        for mode in re.findall(r"edged %s (--[a-z0-9-]+) --help" % cmd, text):
            out[(cmd, mode)] = edged_help(cmd, mode)
    return out


# ---------------------------------------------------------------- reading the help


def help_options(text):
    """{flag: its text, continuation lines joined} of the `  --flag ARG   text` rows of a help."""
    opts, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"  --([a-z0-9-]+)(?: [^ ]+)?\s+(.*)$", line)
        if m:
            cur = m.group(1)
            opts[cur] = m.group(2).strip()
        elif cur and line.startswith(" " * 20) and line.strip():
            opts[cur] += " " + line.strip()
        else:
            cur = None
    return opts


def help_default(flag, text, where):
    """The default an option's help states, or None. Two forms: `VALUE (default)` (also
    `VALUE (default, ...` or `(default; ...`) and `(default[:] VALUE)` (up to a `;`)."""
    n = text.count("(default")
    if n == 0:
        return None
    assert n == 1, "%s: --%s states %d defaults: %s" % (where, flag, n, text)
    a = re.search(r"([^\s(]+) \(default[),;]", text)
    b = re.search(r"\(default:? ([^;)]+)[;)]", text)
    assert a or b, "%s: --%s states its default in a form this test cannot read " \
        "(`X (default)` or `(default X)`): %s" % (where, flag, text)
    return " ".join((a or b).group(1).split())


def serve_rows():
    """[(flag or None, variable, default)] of `edged serve --help`, in its order."""
    rows = re.findall(r"^  (?:--([a-z0-9-]+)|  \(no flag\))\s+(EDGED_[A-Z0-9_]+)\s+default (\S+)",
                      edged_help("serve"), re.M)
    assert len(rows) >= 20, edged_help("serve")
    return [(flag or None, env, "" if dflt == '""' else dflt) for flag, env, dflt in rows]


# ---------------------------------------------------------------- reading the docs


def split_row(line):
    """The cells of a Markdown table row (`\\|` is a pipe inside a cell)."""
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [c.strip() for c in re.split(r"(?<!\\)\|", body)]


def plain(cell):
    """A cell as text: no code marks, `\\|` as |, spaces collapsed."""
    return " ".join(cell.replace("`", "").replace("\\|", "|").split())


def md_lines(text):
    """(line number, line) outside fenced code blocks."""
    fenced = False
    for i, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield i, line


def md_tables(text):
    """[(heading, line number, header cells, [(line number, cells)])] of a Markdown text."""
    tables, heading, prev, cur = [], "", None, None
    for i, line in md_lines(text):
        if line.startswith("#"):
            heading, cur = line.lstrip("#").strip(), None
        elif DELIMITER.match(line) and prev and prev[1].lstrip().startswith("|"):
            cur = (heading, prev[0], split_row(prev[1]), [])
            tables.append(cur)
        elif cur and line.lstrip().startswith("|"):
            cur[3].append((i, split_row(line)))
        else:
            cur = None
        prev = (i, line)
    return tables


def option_rows(tables, where):
    """{flag: (header, cells, line)} of the rows whose first cell starts with `--flag`."""
    rows = {}
    for _, _, header, body in tables:
        for line, cells in body:
            flags = re.findall(r"--([a-z0-9-]+)", cells[0])
            if not flags or not cells[0].lstrip("`").startswith("--"):
                continue
            assert len(flags) == 1, "%s:%d: one option per row, not %s" % (where, line, cells[0])
            assert flags[0] not in rows, "%s:%d: --%s has two rows" % (where, line, flags[0])
            rows[flags[0]] = ([plain(h).lower() for h in header], cells, line)
    return rows


def cli_section(key):
    """The tables of docs/cli.md under the heading that names `edged CMD [--MODE]`."""
    name = "`edged %s`" % " ".join(key)
    return [t for t in md_tables(read(CLI_MD)) if name in t[0]]


def table_under(rel, heading):
    found = [t for t in md_tables(read(rel)) if t[0] == heading]
    assert len(found) == 1, "%s: want one table under '%s', found %d" % (rel, heading, len(found))
    return found[0]


def by_variable(table, rel):
    """{variable: (flag cell, default cell, line)} of a flag | variable | default | meaning table."""
    _, line, header, body = table
    assert [plain(h).lower() for h in header[:3]] == ["flag", "variable", "default"], \
        "%s:%d: the header is %s, not flag | variable | default | ..." % (rel, line, header)
    return {plain(c[1]): (plain(c[0]), plain(c[2]), n) for n, c in body}


# ---------------------------------------------------------------- serve: configuration.md


def test_serve_help_rows_are_configuration_rows():
    doc = by_variable(table_under(CONFIG_MD, "Service settings"), CONFIG_MD)
    seen = set()
    for flag, env, dflt in serve_rows():
        name = "--" + flag if flag else env
        assert env in doc, "%s: no row for %s (%s) of `edged serve --help`" % (CONFIG_MD, name, env)
        doc_flag, doc_dflt, line = doc[env]
        assert doc_flag == ("--" + flag if flag else "(none)"), \
            "%s:%d: %s is the variable of %s in `edged serve --help`, not of %s" % (CONFIG_MD, line, env, name,
                                                                                   doc_flag)
        same = doc_dflt == dflt or doc_dflt.startswith(dflt + " = ") if dflt else doc_dflt == "—"
        assert same, "%s:%d: %s defaults to '%s' in `edged serve --help`, to '%s' in the doc" % (
            CONFIG_MD, line, name, dflt or '""', doc_dflt)
        seen.add(env)
    stale = sorted(set(doc) - seen)
    assert not stale, "%s: rows for variables `edged serve` does not read: %s" % (CONFIG_MD, stale)


def test_readme_configuration_rows_are_configuration_md_rows():
    doc = by_variable(table_under(CONFIG_MD, "Service settings"), CONFIG_MD)
    readme = by_variable(table_under("README.md", "Configuration"), "README.md")
    assert len(readme) >= 5, readme
    for env, (flag, dflt, line) in readme.items():
        assert env in doc, "README.md:%d: %s has no row in %s" % (line, env, CONFIG_MD)
        assert (flag, dflt) == doc[env][:2], "README.md:%d: %s is %s, default %s; %s:%d says %s, default %s" % (
            line, env, flag, dflt, CONFIG_MD, doc[env][2], *doc[env][:2])
    assert "EDGED_API_KEYS" in readme, "README.md's configuration table omits EDGED_API_KEYS"


# ---------------------------------------------------------------- the other commands: cli.md


def test_cli_help_options_are_cli_md_rows():
    """Each option of every help but serve's has a row in its section of cli.md with the default the
    help states and the variables it names; each row there is an option of the help."""
    keys = [k for k in helps() if k != ("serve",)]
    assert ("filter",) in keys and ("bench", "--codec") in keys, keys
    for key in keys:
        check_cli_section(key)


def check_cli_section(key):
    where = "edged %s --help" % " ".join(key)
    opts = help_options(helps()[key])
    if not opts:
        return
    tables = cli_section(key)
    assert tables, "%s: no table under a heading naming `edged %s`, for %s" % (CLI_MD, " ".join(key),
                                                                              sorted(opts))
    rows = option_rows(tables, CLI_MD)
    for flag, text in opts.items():
        assert flag in rows, "%s: no row for --%s of `%s`" % (CLI_MD, flag, where)
        header, cells, line = rows[flag]
        for var in re.findall(r"EDGED_[A-Z0-9_]+", text):
            assert var in " ".join(cells), "%s:%d: --%s names %s in `%s`, its row does not" % (
                CLI_MD, line, flag, var, where)
        dflt = help_default(flag, text, where)
        if dflt is None:
            continue
        assert "default" in header, "%s:%d: --%s has a default in `%s` (%s) and its table no default column" % (
            CLI_MD, line, flag, where, dflt)
        got = plain(cells[header.index("default")])
        assert got == dflt, "%s:%d: --%s defaults to '%s' in `%s`, to '%s' in the doc" % (
            CLI_MD, line, flag, dflt, where, got)
    stale = sorted(set(rows) - set(opts))
    assert not stale, "%s: rows under `edged %s` for options it lacks: %s" % (CLI_MD, " ".join(key), stale)


def test_help_texts_name_real_options():
    """A --flag a help mentions (its synopsis, another option's text) is an option of that command
    or of one of its modes."""
    texts = helps()
    for key, text in texts.items():
        family = set(ANY_COMMAND)
        for other, t in texts.items():
            if other[0] == key[0]:
                family |= set(help_options(t)) | {m.lstrip("-") for m in other[1:]}
        unknown = sorted(set(re.findall(r"(?<![\w-])--([a-z][a-z0-9-]*)", text)) - family)
        assert not unknown, "edged %s --help names options it does not take: %s" % (" ".join(key), unknown)


def test_command_tables_list_every_command():
    cmds = commands()
    for rel in (CLI_MD, "README.md"):
        listed = []
        for _, line, header, body in md_tables(read(rel)):
            if plain(header[0]).lower() == "command":
                listed += [re.match(r"edged ([a-z]+)", plain(c[0])).group(1) for _, c in body]
        assert listed == list(cmds), "%s: the command table lists %s; `edged --help` lists %s" % (rel, listed,
                                                                                                   list(cmds))


# ---------------------------------------------------------------- every table renders


def doc_pages():
    return ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))


@pytest.mark.parametrize("rel", doc_pages())
def test_tables_render(rel):
    """A delimiter row (|---|...) makes a table only under a header row of as many cells."""
    prev = None
    for i, line in md_lines(read(rel)):
        if DELIMITER.match(line):
            n = len(split_row(line))
            assert prev and prev[0] == i - 1 and prev[1].lstrip().startswith("|"), \
                "%s:%d: a delimiter row without a header row before it: the table does not render" % (rel, i)
            assert len(split_row(prev[1])) == n, "%s:%d: the header row has %d cells, the delimiter row %d" % (
                rel, i - 1, len(split_row(prev[1])), n)
        prev = (i, line)


# ---------------------------------------------------------------- the man page


def man_text(roff):
    """What help2man's include keeps of the help: the escapes of server/cli/man_commands.sh undone."""
    return roff.replace("\\-", "-").replace("\\&", "").replace("\\e", "\\")


def test_man_page_carries_every_command():
    if shutil.which("help2man") is None:
        pytest.skip("help2man is not installed (Debian package help2man): the man page is not built")
    binary = os.path.relpath(os.environ.get("EDGED_VG_BIN") or BIN, ROOT)  # valgrind runs: the wrapped binary
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    # -o: the binary under test as it is; -W: the page made anew from it
    cmd = ["make", "--no-print-directory", "-o", binary, "-W", "server/cli/man_commands.sh",
           "BUILD=" + os.path.dirname(binary), "man"]
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, "%s: exit %d\n%s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr)
    page = man_text(read(os.path.join(os.path.dirname(binary), "edged.1")))
    for key, text in helps().items():
        title = "edged " + " ".join(key)
        assert '.SS "%s"' % title in page, "the man page has no section %s" % title
        for line in text.splitlines():
            assert line.strip() in page, "the man page lacks this line of `%s --help`: %s" % (title, line)
