"""core.ansi_html: terraform's colours survive as classes; nothing a hostile line carries becomes markup,
a terminal control, or a bidi override."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

from hypothesis import given
from hypothesis import strategies as st

from core.ansi_html import segments, to_html

ESC = "\x1b"
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
ENTITY = re.compile(r"&(amp|lt|gt|quot|#x27);")
CLASS = re.compile(r"a-(b|d|i|u|f[0-9]|f1[0-5]|g[0-9]|g1[0-5])")


def _controls(text: str) -> list[str]:
    return [c for c in text if (ord(c) < 0x20 and c != "\t") or 0x7F <= ord(c) <= 0x9F or c in BIDI]


class Spans(HTMLParser):
    """The tags and text a browser would build from one rendered line."""

    def __init__(self, markup: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text = ""
        self.feed(markup)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text += data


def test_terraform_colours_become_classes() -> None:
    line = f"{ESC}[1m{ESC}[31m  # aws_s3_bucket.b{ESC}[0m{ESC}[1m will be {ESC}[31mdestroyed{ESC}[0m"
    assert to_html(line) == (
        '<span class="a-b a-f1">  # aws_s3_bucket.b</span><span class="a-b"> will be </span>'
        '<span class="a-b a-f1">destroyed</span>'
    )
    assert to_html(f"{ESC}[32m+{ESC}[0m create") == '<span class="a-f2">+</span> create'
    both = '<span class="a-f10 a-g4">x</span><span class="a-g4">y</span>z'
    assert to_html(f"{ESC}[92;44mx{ESC}[39my{ESC}[49mz") == both


def test_resets_and_toggles() -> None:
    assert to_html(f"{ESC}[1;3;4mA{ESC}[22mB{ESC}[23;24mC{ESC}[mD") == (
        '<span class="a-b a-i a-u">A</span><span class="a-i a-u">B</span>CD'
    )
    assert to_html(f"{ESC}[2mdim{ESC}[0m") == '<span class="a-d">dim</span>'
    assert to_html(f"{ESC}[31;mred-then-reset") == "red-then-reset"  # an empty parameter is 0


def test_extended_colours_map_the_basic_sixteen_and_ignore_the_rest() -> None:
    assert to_html(f"{ESC}[38;5;9mx") == '<span class="a-f9">x</span>'
    assert to_html(f"{ESC}[38;5;200mx") == "x"
    assert to_html(f"{ESC}[38;2;255;0;0;1mx") == '<span class="a-b">x</span>'  # RGB read past, bold still applies
    assert to_html(f"{ESC}[48;5mx") == "x"  # truncated
    assert to_html(f"{ESC}[38mx") == "x"


def test_other_sequences_and_controls_are_dropped() -> None:
    assert to_html(f"a{ESC}[2Kb{ESC}[1Ac{ESC}[?25ld") == "abcd"
    assert to_html(f"{ESC}]8;;https://evil.example/{ESC}\\click{ESC}]8;;{ESC}\\") == "click"
    assert to_html(f"{ESC}]0;title\x07text") == "text"
    assert to_html(f"{ESC}]0;unterminated title") == ""
    assert to_html(f"x{ESC}(By{ESC}") == "xy"
    assert to_html("a\rb\x00c\x07d\x9be\x85f\x7fg\nh") == "abcdefgh"
    assert to_html("tab\tkept") == "tab\tkept"
    assert to_html("aws_iam_role.\u202eadmin\u202c") == "aws_iam_role.admin"


def test_markup_is_text() -> None:
    payload = '<script>alert(1)</script><img src=x onerror="alert(2)">&amp;\''
    assert to_html(payload) == html.escape(payload, quote=True)
    coloured = to_html(f"{ESC}[31m{payload}{ESC}[0m")
    assert Spans(coloured).text == payload and [t for t, _ in Spans(coloured).tags] == ["span"]


LINES = st.text(alphabet=st.sampled_from([*"ab<>&\"' ;[]m0123456789\t\r\n\x00\x07\x9b\x85", ESC, *BIDI]))


@given(st.one_of(st.text(), LINES))
def test_no_line_can_produce_markup_controls_or_overrides(line: str) -> None:
    markup = to_html(line)
    outside_tags = re.sub(r'<span class="[a-z0-9 -]+">|</span>', "", markup)
    assert "<" not in outside_tags and ">" not in outside_tags and '"' not in outside_tags
    assert "&" not in ENTITY.sub("", outside_tags)
    assert not _controls(markup) and ESC not in markup
    parsed = Spans(markup)
    assert {tag for tag, _ in parsed.tags} <= {"span"}
    for _, attrs in parsed.tags:
        assert list(attrs) == ["class"]
        assert all(CLASS.fullmatch(c) for c in (attrs["class"] or "").split())
    assert parsed.text == "".join(text for _, text in segments(line))


@given(st.text())
def test_text_without_escapes_or_controls_is_only_escaped(line: str) -> None:
    clean = "".join(c for c in line if not _controls(c) and not 0xD800 <= ord(c) <= 0xDFFF)
    assert to_html(clean) == html.escape(clean, quote=True)


def test_a_parameter_too_long_for_an_int_is_ignored_not_raised() -> None:
    """Python refuses int() of more than 4,300 digits: a plan printing such an SGR would make its run page
    answer 500 and its live stream fail and reconnect on the same line for good."""
    huge = "9" * 5000
    assert to_html(f"\x1b[{huge}mplain \x1b[1;{huge}mbold") == 'plain <span class="a-b">bold</span>'
    assert to_html(f"\x1b[38;5;{huge}mx\x1b[48;5;{'0' * 4999}3my") == 'x<span class="a-g3">y</span>'


PARAMS = st.one_of(st.text("0123456789", max_size=4), st.integers(4301, 6000).map(lambda n: "1" * n))


@given(st.lists(PARAMS, min_size=1, max_size=4).map(";".join))
def test_any_sgr_parameters_render(params: str) -> None:
    line = f"\x1b[{params}mtext"
    assert re.fullmatch(r'(<span class="[a-z0-9 -]+">)?text(</span>)?', to_html(line))
