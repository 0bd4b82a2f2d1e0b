from pathlib import Path


def test_report_totals_sorted():
    assert Path("/app/report.txt").read_text().splitlines() == ["bo 76", "ada 50", "cy 45"]


def test_report_has_one_line_per_customer():
    assert len(Path("/app/report.txt").read_text().splitlines()) == 3
