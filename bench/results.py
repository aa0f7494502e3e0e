"""bench/RESULTS.md: a benchmark's section, put in place of its earlier one (same heading)
or appended, so each script can run on its own, in any order, and `make bench` runs them all."""
from pathlib import Path

PATH = Path(__file__).resolve().parent / "RESULTS.md"


def write_head(lines):
    """Puts `lines` (the title and what applies to every section) in place of everything before
    the first section, keeping the sections."""
    text = PATH.read_text() if PATH.exists() else ""
    first = text.find("\n## ")
    rest = text[first + 1:] if first >= 0 else ""
    PATH.write_text("\n".join(lines).rstrip("\n") + "\n\n" + rest)


def write_section(heading, section):
    """`section` is a list of lines starting with `heading`."""
    text = PATH.read_text() if PATH.exists() else "# Benchmarks\n"
    if heading in text:
        before, rest = text.split(heading, 1)
        nxt = rest.find("\n## ")
        after = rest[nxt + 1:] if nxt >= 0 else ""
        text = before + "\n".join(section) + ("\n" + after if after else "")
    else:
        text = text.rstrip("\n") + "\n\n" + "\n".join(section)
    PATH.write_text(text)
