"""The class report as a person sees it: opened from disk in headless Chromium, no console error, plots drawn.

A small public-mode charlm batch (another assignment, the other mode than tests/test_classreport.py) is
graded once; its report is opened with selenium driving Debian's chromium and chromedriver, a
screenshot is taken, and every plot must have decoded to a real image. Outside CI a machine
without chromium skips with the reason; in CI (CI=true) that is a failure.
`python tests/test_classreport_browser.py REPORT.html SHOT.png` takes the README's screenshot.
"""

import os
import shutil
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def open_report(path, screenshot, width=1200, height=1600):
    """(console messages, [(complete, naturalWidth, alt)] of the page's images) after loading `path`."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    profile = tempfile.mkdtemp(prefix="hwcheck-chromium-")
    opts = webdriver.ChromeOptions()
    for flag in FLAGS + [f"--user-data-dir={profile}", f"--window-size={width},{height}"]:
        opts.add_argument(flag)
    opts.binary_location = CHROMIUM
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    try:
        driver.get("file://" + os.path.abspath(path))
        images = driver.execute_script(
            "return Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.alt])")
        driver.save_screenshot(str(screenshot))
        return driver.get_log("browser"), images
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def browser():
    missing = [n for n, p in (("chromium", CHROMIUM), ("chromedriver", CHROMEDRIVER)) if not p]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("selenium (pip install 'hwcheck[test]')")
    if missing:
        why = f"needs {', '.join(missing)} (apt-get install chromium chromium-driver)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI must open the report in a browser: {why}")
        pytest.skip(why)


@pytest.fixture(scope="module")
def charlm_report(tmp_path_factory, browser):
    pytest.importorskip("matplotlib")
    pytest.importorskip("copydetect")
    base = tmp_path_factory.mktemp("browser")
    subs = base / "subs"
    subs.mkdir()
    for name in ("correct.py", "mask_next_token.py"):
        shutil.copyfile(os.path.join(ROOT, "submissions", "charlm", name), subs / name)
    out = base / "out"
    for args in (["grade", str(subs), "-a", "charlm", "-o", str(out), "--public"], ["report", str(out)]):
        proc = subprocess.run([sys.executable, "-m", "checker.cli", *args], capture_output=True, text=True,
                              cwd=ROOT, timeout=600)
        assert proc.returncode == 0, proc.stderr + proc.stdout
    return base, out / "report.html"


@pytest.mark.slow
def test_report_opens_without_console_errors_and_shows_its_plots(charlm_report):
    base, page = charlm_report
    shot = base / "report.png"
    console, images = open_report(page, shot)
    errors = [m for m in console if m.get("level") in ("SEVERE", "ERROR")]
    assert errors == [], errors
    assert len(images) >= 2, images  # the total and at least one question
    assert all(complete and width > 100 for complete, width, _alt in images), images
    assert shot.stat().st_size > 10_000, "a screenshot with something on it"


if __name__ == "__main__":
    log, imgs = open_report(sys.argv[1], sys.argv[2])
    print(log, imgs)
