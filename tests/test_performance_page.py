"""`make bench` writes docs/performance.md from the tables the benches print."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent
SCRIPT = ROOT / "bench" / "performance_page.py"
BENCHES = ["pipeline", "memory", "embedding_request", "context", "prompt_cache", "learning_cost"]
BENCHES += ["cli_startup", "tools", "llm_boundary", "observe", "metrics", "pipeline-vs-17afadf"]
BENCHES += ["telegram_cost"]


def write_page(outputs: Path, page: Path, *more: str) -> str:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--from", str(outputs), "--page", str(page), *more],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return page.read_text(encoding="utf-8")


def test_the_page_holds_each_table_once_with_its_caption_machine_and_date(tmp_path: Path) -> None:
    for name in BENCHES:
        (tmp_path / f"{name}.txt").write_text(f"{name}: warming up\n", encoding="utf-8")
    progress = "| server | p50 ms |\n|---|---|\n| floor | 5.0 |\n"
    (tmp_path / "memory.txt").write_text(
        f"dimension 256: filling\n{progress}\nResults (2026-12-02):\n\n{progress}",
        encoding="utf-8",
    )
    (tmp_path / "cli_startup.txt").write_text(
        "| command | p50 ms |  (20 runs)\n|---|---|\n| liz fa<TAB> | 150 |\n", encoding="utf-8"
    )
    page = write_page(tmp_path, tmp_path / "perf.md", "--date", "2026-12-02 15:46 UTC")

    assert "2026-12-02 15:46 UTC" in page and "cores" in page
    assert page.count("| floor | 5.0 |") == 1  # printed twice, shown once
    assert "Results (2026-12-02):\n\n| server | p50 ms |" in page
    assert "20 runs each:\n\n| command | p50 ms |\n" in page
    assert "liz fa&lt;TAB&gt;" in page  # not swallowed as an HTML tag
    assert "No table: this bench printed none." in page  # pipeline printed only progress
    assert "## Design decisions and their measured reasons" in page


def test_only_rewrites_the_benches_it_ran(tmp_path: Path) -> None:
    for name in BENCHES:
        (tmp_path / f"{name}.txt").write_text(f"| {name} |\n|---|\n| first |\n", encoding="utf-8")
    page = tmp_path / "perf.md"
    write_page(tmp_path, page, "--date", "day one")
    (tmp_path / "context.txt").write_text("| context |\n|---|\n| second |\n", encoding="utf-8")
    text = write_page(tmp_path, page, "--date", "day two", "--only", "context.py")

    assert "| context |\n|---|\n| second |" in text
    assert "| pipeline |\n|---|\n| first |" in text
    assert "`bench/pipeline.py`; run day one." in text
    assert "`bench/context.py`; run day two." in text
