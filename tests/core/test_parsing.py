from hypothesis import given, strategies as st

from gem_core.parsing import last_boxed


def test_last_boxed_cases():
    assert last_boxed(r"\boxed{5}") == "5"
    assert last_boxed(r"first \boxed{1} then \boxed{2}") == "2"
    assert last_boxed(r"\boxed{\frac{1}{2}}") == r"\frac{1}{2}"
    assert last_boxed(r"\boxed{a \boxed{b}}") == "b"
    assert last_boxed(r"\boxed{3} and an unclosed \boxed{4") == "3"
    assert last_boxed(r"\fbox{7}") == "7"
    assert last_boxed(r"\boxed{}") == ""
    assert last_boxed("no box at all {}") is None
    assert last_boxed("") is None
    assert last_boxed("}" * 10 + r"\boxed{x}" + "{" * 10) == "x"


@given(st.text())
def test_last_boxed_never_raises_and_returns_a_substring(text):
    result = last_boxed(text)
    assert result is None or result in text


@given(st.text(alphabet="{}\\boxedf x", max_size=200))
def test_last_boxed_on_brace_soup(text):
    result = last_boxed(text)
    assert result is None or result.count("{") == result.count("}")

