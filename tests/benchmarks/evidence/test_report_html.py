"""The report's HTML pieces: run text escaped, the Markdown subset, the video budget (issue 34)."""

from pathlib import Path

from benchmarks.evidence.report_data import Call, UnitView
from benchmarks.evidence.report_html import VideoBudget, markdown_html, unit_html

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def test_model_text_instructions_and_errors_are_escaped(tmp_path):
    call = Call("p1", HOSTILE, {"plan": HOSTILE}, [HOSTILE], 0.5, 3, 4, where="step 1", injected=HOSTILE)
    ok = unit_html(UnitView("u<1>", [HOSTILE], "failure", None, calls=[call]), VideoBudget(tmp_path))
    bad = unit_html(UnitView("u2", [], None, HOSTILE), VideoBudget(tmp_path))
    for page in (ok, bad):
        assert "<script>" not in page and "<img" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in ok and 'data-key="u&lt;1&gt;"' in ok
    assert 'data-outcome="error"' in bad and "error: &lt;script&gt;" in bad


def test_markdown_subset_renders_tables_lists_and_escapes():
    text = "## Title <b>\n\nRate **72.0** [52, 85] over `n = 25`\n\n| a | b |\n|---|---|\n| 1 | <i>2</i> |\n\n- **x**: 1\n"
    html = markdown_html(text)
    assert "<h3>Title &lt;b&gt;</h3>" in html
    assert "<p>Rate <strong>72.0</strong> [52, 85] over <code>n = 25</code></p>" in html
    assert (
        "<thead><tr><th>a</th><th>b</th></tr></thead><tbody><tr><td>1</td><td>&lt;i&gt;2&lt;/i&gt;</td>"
        in html
    )
    assert "<ul><li><strong>x</strong>: 1</li></ul>" in html and "---" not in html


def test_small_videos_are_inlined_and_large_ones_linked_relative_to_the_report(tmp_path):
    run = tmp_path / "runs" / "calvin" / "a" / "videos"
    run.mkdir(parents=True)
    small, large = run / "chain-0000.mp4", run / "chain-0001.mp4"
    small.write_bytes(b"\0" * 100)
    large.write_bytes(b"\0" * 300)
    budget = VideoBudget(tmp_path / "reports", total=250)
    assert 'src="data:video/mp4;base64,' in budget.html(small)
    linked = budget.html(large)  # 300 bytes > the 150 left
    assert 'src="../runs/calvin/a/videos/chain-0001.mp4"' in linked and "linked beside" in linked
    assert "missing" in budget.html(Path(run / "gone.mp4"))
