from neardup_stream.fingerprint.normalize import normalize, strip_html
from neardup_stream.fingerprint.shingles import char_shingles, jaccard, shingles, word_shingles


def test_normalize_nfkc_casefold_whitespace() -> None:
    assert normalize("  Ｈｅｌｌｏ\t\n WORLD  ﬁ ") == "hello world fi"
    assert normalize("Straße") == "strasse"


def test_strip_html_removes_tags_scripts_and_entities() -> None:
    html = "<html><script>var x=1;</script><p>Fish &amp; chips</p><!-- c --></html>"
    assert normalize(html, html_input=True) == "fish & chips"
    assert "var" not in strip_html(html)


def test_char_shingles_work_for_cjk_without_segmenter() -> None:
    text = normalize("北京是中华人民共和国的首都")
    grams = char_shingles(text, 5)
    assert grams[0] == "北京是中华" and len(grams) == len(text) - 4
    assert char_shingles("日本語", 5) == ["日本語"]
    assert char_shingles("", 5) == []


def test_word_shingles_and_short_fallback() -> None:
    assert word_shingles("a b c d", 3) == ["a b c", "b c d"]
    assert word_shingles("a b", 3) == ["a b"]
    assert shingles("abcdef", "char", 5) == ["abcde", "bcdef"]


def test_jaccard_edge_cases() -> None:
    assert jaccard([], []) == 1.0
    assert jaccard(["a"], []) == 0.0
    assert jaccard("abc", "bcd") == 0.5
