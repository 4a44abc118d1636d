"""`crawlq web` in a real browser: Debian's Chromium, driven by Selenium, against the console
served by the CLI over a real redis-server, with workers of the Python binding leasing from the
same queue. Each page is loaded and saved as a screenshot (in $CRAWLQ_CONSOLE_SHOTS, default
target/console-screenshots)."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import crawlq
import pytest
import redis
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.support.ui import WebDriverWait

ROOT = Path(__file__).resolve().parents[2]
CLI = os.environ.get("CRAWLQ_CLI_BIN", "")
SHOTS = Path(os.environ.get("CRAWLQ_CONSOLE_SHOTS", ROOT / "target" / "console-screenshots"))
CHROMIUM = os.environ.get("CRAWLQ_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CRAWLQ_CHROMEDRIVER", "/usr/bin/chromedriver")
PROMETHEUS = os.environ.get("CRAWLQ_PROMETHEUS_BIN", "/usr/bin/prometheus")
OPTIONS = {"host_delay": 0.0, "max_attempts": 1, "backoff_base": 0.0}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def redis_url():
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="crawlq-console-redis.")
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", workdir],
        stdout=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            break
        except OSError:
            time.sleep(0.05)
    yield url
    server.kill()
    server.wait()
    shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="module")
def shop(redis_url):
    """A queue with ready items on three hosts and dead letters of two reasons."""
    q = crawlq.Queue(redis_url, "shop", **OPTIONS)
    report = q.seed([f"https://dead.example/{i}" for i in range(3)])
    assert report.added == 3
    dead = q.lease(3, wait=1.0)
    assert len(dead) == 3
    q.nack(dead[0], retry=False, reason="http 404")
    q.nack(dead[1], retry=False, reason="http 404")
    q.nack(dead[2], retry=False, reason="timeout")
    urls = [f"https://a.example/{i}" for i in range(4)] + [f"https://b.example/{i}" for i in range(3)]
    assert q.seed(urls).added == 7
    crawlq.Queue(redis_url, "other", **OPTIONS).seed(["https://c.example/"])
    return q


class Console:
    """A `crawlq web` process; its log lines are read from its standard output."""

    def __init__(self, redis_url: str, *args: str):
        assert CLI, "CRAWLQ_CLI_BIN names the crawlq binary"
        self.proc = subprocess.Popen(
            [CLI, "--redis", redis_url, "-o", "host_delay=0", "web", "--listen", "127.0.0.1:0", "--sample-every", "0.5", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        first = self.proc.stdout.readline()
        match = re.search(r"http://([0-9.:]+)/", first)
        assert match, f"no address in {first!r}: {self.proc.stderr.read() if self.proc.poll() is not None else ''}"
        self.base = f"http://{match.group(1)}"

    def log_lines(self) -> list[str]:
        self.stop()
        return self.proc.stdout.read().splitlines()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            assert self.proc.wait(timeout=10) == 0, "SIGTERM ends the console with status 0"


def http(url: str, data: dict | None = None, headers: dict | None = None) -> tuple[int, str, dict]:
    body = urllib.parse.urlencode(data).encode() if data is not None else None
    request = urllib.request.Request(url, data=body, headers=headers or {})

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *a, **k):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(request, timeout=10) as r:
            return r.status, r.read().decode(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), dict(e.headers)


@pytest.fixture(scope="module")
def browser():
    options = Options()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="crawlq-console-chromium.")
    for flag in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--window-size=1280,900", f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(20)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def shot(driver, name: str):
    SHOTS.mkdir(parents=True, exist_ok=True)
    assert driver.save_screenshot(str(SHOTS / f"{name}.png")), name


def text(driver, css: str) -> str:
    return driver.find_element(By.CSS_SELECTOR, css).text


def number(driver, css: str) -> int:
    return int(text(driver, css).replace(",", ""))


def follow(driver, element):
    """Click a link or a submit button and wait for the page it loads: the old page carries a
    mark the new one does not (a check on an element of the old page can fail while the
    browser swaps documents)."""
    driver.execute_script("window.crawlqOldPage = true")
    element.click()

    def loaded(d):
        try:
            return d.execute_script("return !window.crawlqOldPage && document.readyState === 'complete'")
        except WebDriverException:
            return False

    WebDriverWait(driver, 15).until(loaded)


def click_action(driver, action: str):
    """Click the button of an action, then its confirmation; the flash message is returned."""
    follow(driver, driver.find_element(By.CSS_SELECTOR, f'button[data-action="{action}"]'))
    assert driver.find_element(By.ID, "confirm-what").text, "an action asks for confirmation"
    follow(driver, driver.find_element(By.ID, "confirm"))
    flash = driver.find_elements(By.CSS_SELECTOR, ".flash")
    assert flash, f"no message after {action}: {driver.current_url} {driver.page_source[:3000]}"
    return flash[0].text


def test_every_page_shows_the_queues_real_figures(redis_url, shop, browser):
    console = Console(redis_url)
    try:
        stats = shop.stats()
        browser.get(console.base + "/")
        rows = {r.get_attribute("data-queue"): r for r in browser.find_elements(By.CSS_SELECTOR, "#queues tr[data-queue]")}
        assert set(rows) == {"shop", "other"}, "the discovered queues"
        cells = [c.text for c in rows["shop"].find_elements(By.CSS_SELECTOR, "td.n")]
        assert cells[:6] == [str(stats[k]) for k in ("pending", "ready", "delayed", "leased", "dead", "done")]
        shot(browser, "queues")
        follow(browser, browser.find_element(By.ID, "live"))
        assert browser.find_element(By.CSS_SELECTOR, 'meta[http-equiv="refresh"]').get_attribute("content") == "10"
        assert text(browser, "#live") == "Stop reloading"
        browser.get(console.base + "/")
        rows = {r.get_attribute("data-queue"): r for r in browser.find_elements(By.CSS_SELECTOR, "#queues tr[data-queue]")}

        follow(browser, rows["shop"].find_element(By.LINK_TEXT, "shop"))
        assert number(browser, "#pending") == stats["pending"] == 7
        assert number(browser, "#dead") == stats["dead"] == 3
        assert number(browser, "#hosts") == stats["hosts"]
        assert text(browser, "#queue-state") == "running"
        assert len(browser.find_elements(By.CSS_SELECTOR, "figure.chart")) == 2
        shot(browser, "queue")

        browser.get(console.base + "/q/shop/hosts")
        hosts = {r.get_attribute("data-host"): r for r in browser.find_elements(By.CSS_SELECTOR, "#hosts tr[data-host]")}
        assert {"a.example", "b.example", "dead.example"} <= set(hosts)
        a_items = int(hosts["a.example"].find_elements(By.CSS_SELECTOR, "td.n")[0].text)
        assert a_items == 4
        shot(browser, "hosts")

        browser.get(console.base + "/q/shop/hosts?host=b.example")
        assert browser.current_url.endswith("/q/shop/host/b.example"), "the search opens the host"
        assert text(browser, "#host-ready") == "3"
        listed = [r.find_elements(By.TAG_NAME, "td")[0].text for r in browser.find_elements(By.CSS_SELECTOR, "#items tr")[1:]]
        assert listed == [f"https://b.example/{i}" for i in range(3)], "its ready items in lease order"
        shot(browser, "host")

        browser.get(console.base + "/q/shop/dead")
        assert text(browser, "#dead-total") == "3"
        reasons = {r.find_elements(By.TAG_NAME, "td")[0].text: r.find_elements(By.TAG_NAME, "td")[1].text
                   for r in browser.find_elements(By.CSS_SELECTOR, "#reasons tr")[1:]}
        assert reasons == {"http 404": "2", "timeout": "1"}
        shot(browser, "dead")
        follow(browser, browser.find_element(By.CSS_SELECTOR, "#dead tr[data-id] a"))
        assert "dead.example" in text(browser, "#letter")
        shot(browser, "dead-letter")

        status, body, _ = http(console.base + "/q/nosuch")
        assert status == 404, "a queue the console does not show is not found"
    finally:
        console.stop()


def test_pausing_a_host_stops_its_leases_and_resuming_starts_them(redis_url, shop, browser):
    console = Console(redis_url)
    try:
        browser.get(console.base + "/q/shop/host/a.example")
        assert click_action(browser, "pause-host") == "paused host a.example"
        assert "yes" in text(browser, "#host-paused")
        worker = crawlq.Queue(redis_url, "shop", **OPTIONS)
        leases = worker.lease(10, wait=0.3)
        assert leases and {l.host for l in leases} == {"b.example"}, "a paused host is not leased"
        worker.release(leases)

        assert click_action(browser, "resume-host") == "resumed host a.example"
        leases = worker.lease(10, wait=0.3)
        assert "a.example" in {l.host for l in leases}, "leased again once resumed"
        worker.release(leases)

        log = console.log_lines()
        assert any("action=pause-host queue=shop host=a.example: paused host a.example" in l for l in log), log
        assert any("action=resume-host" in l for l in log), log
    finally:
        console.stop()


def test_a_requeued_dead_letter_is_leased_again(redis_url, shop, browser):
    console = Console(redis_url)
    try:
        browser.get(console.base + "/q/shop/dead?reason=timeout")
        row = browser.find_element(By.CSS_SELECTOR, "#dead tr[data-id]")
        url = row.find_elements(By.TAG_NAME, "td")[1].text
        follow(browser, row.find_element(By.CSS_SELECTOR, 'button[data-action="requeue-dead"]'))
        follow(browser, browser.find_element(By.ID, "confirm"))
        assert text(browser, ".flash").startswith("requeued dead letter")
        assert text(browser, "#dead-total") == "2"

        worker = crawlq.Queue(redis_url, "shop", **OPTIONS)
        leased = []
        for _ in range(5):
            got = worker.lease(20, wait=0.3)
            leased += got
            if any(l.url == url for l in got):
                break
        assert any(l.url == url for l in leased), f"{url} leased again"
        worker.release(leased)
    finally:
        console.stop()


def test_queue_pause_and_cancel(redis_url, shop, browser):
    console = Console(redis_url)
    try:
        browser.get(console.base + "/q/shop")
        follow(browser, browser.find_element(By.CSS_SELECTOR, 'button[data-action="pause-queue"]'))
        follow(browser, browser.find_element(By.ID, "cancel"))
        assert text(browser, "#queue-state") == "running", "cancel does nothing"
        assert click_action(browser, "pause-queue") == "paused queue shop"
        assert "paused" in text(browser, "#queue-state")
        assert crawlq.Queue(redis_url, "shop", **OPTIONS).lease(5, wait=0.2) == []
        assert click_action(browser, "resume-queue") == "resumed queue shop"
        assert text(browser, "#queue-state") == "running"
    finally:
        console.stop()


def test_read_only_refuses_every_action(redis_url, shop, browser):
    console = Console(redis_url, "--read-only")
    try:
        browser.get(console.base + "/q/shop/host/a.example")
        assert text(browser, "header .mode") == "read-only"
        assert browser.find_elements(By.CSS_SELECTOR, "button[data-action]") == [], "no action offered"
        shot(browser, "read-only")
        for action in ("pause-host", "purge-dead"):
            status, body, _ = http(console.base + "/q/shop/action",
                                   {"action": action, "host": "a.example", "confirm": "yes"})
            assert status == 403 and "read-only" in body
        assert crawlq.Queue(redis_url, "shop", **OPTIONS).stats()["dead"] == 2, "nothing purged"
        assert any("refused: read-only" in l for l in console.log_lines())
    finally:
        console.stop()


def test_the_token_is_asked_for_by_every_page_and_action(redis_url, shop, browser):
    console = Console(redis_url, "--token", "s3cret-token")
    try:
        for path in ("/", "/q/shop", "/q/shop/dead"):
            status, body, _ = http(console.base + path)
            assert status == 401 and 'name="token"' in body and "shop" not in body.replace("/q/shop", "")
        status, _, _ = http(console.base + "/q/shop/action", {"action": "purge-dead", "confirm": "yes"})
        assert status == 401
        status, _, _ = http(console.base + "/", headers={"Authorization": "Bearer wrong"})
        assert status == 401
        status, body, _ = http(console.base + "/", headers={"Authorization": "Bearer s3cret-token"})
        assert status == 200 and 'data-queue="shop"' in body

        browser.delete_all_cookies()
        browser.get(console.base + "/q/shop")
        browser.find_element(By.ID, "token").send_keys("not-it")
        follow(browser, browser.find_element(By.ID, "login"))
        assert "not the console's" in text(browser, ".error")
        browser.find_element(By.ID, "token").send_keys("s3cret-token")
        follow(browser, browser.find_element(By.ID, "login"))
        assert browser.current_url.endswith("/q/shop") and number(browser, "#pending") >= 0
        shot(browser, "after-login")

        # a form posted by another site is refused even with the token
        status, body, _ = http(console.base + "/q/shop/action",
                               {"action": "purge-dead", "confirm": "yes"},
                               {"Authorization": "Bearer s3cret-token", "Origin": "http://evil.example"})
        assert status == 403
        assert crawlq.Queue(redis_url, "shop", **OPTIONS).stats()["dead"] == 2
    finally:
        console.stop()


def test_an_address_beyond_loopback_needs_a_token(redis_url):
    out = subprocess.run([CLI, "--redis", redis_url, "web", "--listen", "0.0.0.0:0"],
                         capture_output=True, text=True, timeout=20)
    assert out.returncode == 2 and "--token" in out.stderr, out.stderr


def test_dead_letters_are_purged_by_reason_by_id_and_all(redis_url, browser):
    gone = crawlq.Queue(redis_url, "gone", **OPTIONS)
    assert gone.seed([f"https://gone{i}.example/" for i in range(5)]).added == 5
    leases = gone.lease(5, wait=1.0)
    assert len(leases) == 5
    for lease, reason in zip(leases, ["dns", "dns", "http 500", "http 500", "http 500"]):
        gone.nack(lease, retry=False, reason=reason)
    console = Console(redis_url)
    try:
        browser.get(console.base + "/q/gone/dead")
        row = next(r for r in browser.find_elements(By.CSS_SELECTOR, "#reasons tr")[1:] if r.text.startswith("dns"))
        follow(browser, row.find_element(By.CSS_SELECTOR, 'button[data-action="purge-reason"]'))
        assert "dns" in text(browser, "#confirm-what")
        follow(browser, browser.find_element(By.ID, "confirm"))
        assert text(browser, ".flash") == 'purged 2 dead letters whose reason is "dns"'
        assert gone.stats()["dead"] == 3

        row = browser.find_element(By.CSS_SELECTOR, "#dead tr[data-id]")
        purged_url = row.find_elements(By.TAG_NAME, "td")[1].text
        follow(browser, row.find_element(By.CSS_SELECTOR, 'button[data-action="purge-dead"]'))
        follow(browser, browser.find_element(By.ID, "confirm"))
        assert text(browser, ".flash").startswith("purged dead letter")
        assert purged_url not in [l["url"] for l in gone.dead(10)], "that letter is gone"
        assert gone.stats()["dead"] == 2

        assert click_action(browser, "purge-dead") == "purged 2 dead letters"
        stats = gone.stats()
        assert (stats["dead"], stats["seen"]) == (0, 5), "purged letters stay seen"
        assert any("action=purge-reason queue=gone" in l for l in console.log_lines())
    finally:
        console.stop()


def test_charts_and_rates_follow_a_draining_queue(redis_url, browser):
    news = crawlq.Queue(redis_url, "news", **OPTIONS)
    assert news.seed([f"https://site{i % 8}.example/page/{i}" for i in range(400)]).added == 400
    console = Console(redis_url)
    try:
        for _ in range(8):  # 8 rounds over about 4 readings of the sampler
            leases = news.lease(20, wait=0.2)
            news.ack(leases)
            news.seed([f"https://site{i % 8}.example/more/{time.time_ns()}-{i}" for i in range(5)])
            time.sleep(0.3)
        browser.get(console.base + "/q/news")
        assert float(text(browser, "#acked-rate").replace(",", "")) > 0, "acks were counted into a rate"
        lines = browser.find_elements(By.CSS_SELECTOR, "figure.chart polyline")
        assert len(lines) == 6
        depth = lines[0].get_attribute("points").split()
        assert len(depth) >= 3, f"pending drawn from several readings: {depth}"
        assert number(browser, "#pending") == news.stats()["pending"]
        shot(browser, "queue-live")
    finally:
        console.stop()


def test_history_comes_from_prometheus_scraping_the_exporter(redis_url, browser):
    """A real Prometheus scrapes `crawlq exporter` every second; the console charts its
    range queries, and falls back to its own readings when Prometheus is gone."""
    hist = crawlq.Queue(redis_url, "hist", **OPTIONS)
    assert hist.seed([f"https://h{i % 5}.example/{i}" for i in range(300)]).added == 300
    # (a named crawl on the same hosts: its page charts the exporter's per-crawl series)
    assert hist.seed([f"https://h{i % 5}.example/c{i}" for i in range(120)], crawl="hc").added == 120
    exporter = subprocess.Popen([CLI, "--redis", redis_url, "-q", "hist", "exporter", "--listen", "127.0.0.1:0"],
                                stdout=subprocess.PIPE, text=True)
    workdir = Path(tempfile.mkdtemp(prefix="crawlq-console-prometheus."))
    prometheus = None
    console = None
    try:
        metrics = re.search(r"http://([0-9.:]+)/metrics", exporter.stdout.readline()).group(1)
        (workdir / "prometheus.yml").write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            f"scrape_configs:\n  - job_name: crawlq\n    static_configs:\n      - targets: ['{metrics}']\n"
        )
        port = free_port()
        prometheus = subprocess.Popen(
            [PROMETHEUS, f"--config.file={workdir / 'prometheus.yml'}", f"--storage.tsdb.path={workdir / 'data'}",
             f"--web.listen-address=127.0.0.1:{port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        for _ in range(200):
            try:
                if http(f"http://127.0.0.1:{port}/-/ready")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        else:
            raise AssertionError("Prometheus did not get ready")
        query = f"http://127.0.0.1:{port}/api/v1/query?query=" + urllib.parse.quote('crawlq_up{queue="hist"}')
        for _ in range(300):  # its first scrape comes a few seconds after it is ready
            if json.loads(http(query)[1])["data"]["result"]:
                break
            time.sleep(0.1)
        else:
            raise AssertionError("Prometheus did not scrape the exporter")
        for _ in range(12):  # about 6 s of draining, scraped every second
            hist.ack(hist.lease(15, wait=0.2))
            time.sleep(0.5)
        console = Console(redis_url, "--prometheus", f"http://127.0.0.1:{port}")
        browser.get(console.base + "/q/hist?range=5m")
        assert "Prometheus, last 5m" in text(browser, "#history-source")
        lines = browser.find_elements(By.CSS_SELECTOR, "figure.chart polyline")
        pending = [tuple(map(float, p.split(","))) for p in lines[0].get_attribute("points").split()]
        assert len(pending) >= 3, pending
        ys = [y for _, y in pending]
        assert ys[-1] > ys[0], "pending fell over the window (a higher value is drawn higher up: a smaller y)"
        acked = lines[3].get_attribute("points").split()
        assert len(acked) >= 2, acked
        shot(browser, "queue-prometheus")
        browser.get(console.base + "/q/hist/crawl/hc?range=5m")
        assert "Prometheus, last 5m" in text(browser, "#history-source")
        lines = browser.find_elements(By.CSS_SELECTOR, "figure.chart polyline")
        assert len(lines) == 5, "pending, leased, dead; done and seeded"
        pending = [float(p.split(",")[1]) for p in lines[0].get_attribute("points").split()]
        assert len(pending) >= 3 and pending[-1] > pending[0], f"the crawl's pending fell: {pending}"
        assert len(lines[3].get_attribute("points").split()) >= 2, "its done/s"
        assert "done" in browser.find_elements(By.CSS_SELECTOR, "figure.chart")[1].text

        prometheus.kill()
        prometheus.wait()
        prometheus = None
        for page in ("/q/hist?range=1h", "/q/hist/crawl/hc?range=1h"):
            browser.get(console.base + page)
            assert "Prometheus could not be read" in text(browser, "#history-source"), page
            assert len(browser.find_elements(By.CSS_SELECTOR, "figure.chart")) == 2
    finally:
        if console:
            console.stop()
        if prometheus:
            prometheus.kill()
            prometheus.wait()
        exporter.kill()
        exporter.wait()
        shutil.rmtree(workdir, ignore_errors=True)


def test_urls_seeded_from_a_page_report_each_refused_line_by_number(redis_url, browser):
    """The seed form of a queue page and of a crawl page: lines as `crawlq seed` reads them,
    the counts and each refused line's number in the message, a bad priority or an oversized
    form refused with nothing seeded."""
    q = crawlq.Queue(redis_url, "sown", **OPTIONS)
    assert q.seed(["https://sown.example/old"]).added == 1
    assert q.seed(["https://sown.example/c"], crawl="c1").added == 1
    console = Console(redis_url)
    try:
        browser.get(console.base + "/q/sown")
        lines = "https://a.example/1\n\n# a comment\nftp://bad.example/\nhttps://a.example/1\nexample.org\nhttps://sown.example/old"
        browser.find_element(By.CSS_SELECTOR, "form.seed textarea").send_keys(lines)
        browser.find_element(By.CSS_SELECTOR, 'form.seed input[name="priority"]').send_keys("5")
        browser.execute_script("arguments[0].scrollIntoView()", browser.find_element(By.CSS_SELECTOR, "form.seed"))
        shot(browser, "seed-form")
        follow(browser, browser.find_element(By.CSS_SELECTOR, 'button[data-action="seed"]'))
        assert "Seed 5 lines into queue sown at priority 5?" in text(browser, "#confirm-what")
        shot(browser, "seed-confirm")
        follow(browser, browser.find_element(By.ID, "confirm"))
        assert text(browser, ".flash") == (
            "seeded 5 lines into queue sown: 2 added, 2 duplicates, 1 invalid (line 4: unsupported_scheme)"
        )
        heads = {item["host"]: item["priority"] for item in q.peek(10)}  # (a host's first item)
        assert heads == {"a.example": 5, "example.org": 5, "sown.example": 0}, heads

        browser.get(console.base + "/q/sown/crawl/c1")
        browser.find_element(By.CSS_SELECTOR, "form.seed textarea").send_keys("https://b.example/x\nhttps://sown.example/c")
        follow(browser, browser.find_element(By.CSS_SELECTOR, 'button[data-action="seed"]'))
        assert "into crawl c1 of sown?" in text(browser, "#confirm-what")
        follow(browser, browser.find_element(By.ID, "confirm"))
        assert text(browser, ".flash") == "seeded 2 lines into crawl c1: 1 added, 1 duplicates, 0 invalid"
        assert q.crawl_stats("c1")["pending"] == 2

        before = q.stats()["seeded_total"]
        for form, status, said in [
            ({"urls": "https://c.example/", "priority": "high"}, 400, "a priority is a whole number"),
            ({"urls": "\n# nothing\n"}, 400, "give one URL or host per line"),
            ({"urls": "https://c.example/", "crawl": "bad:name"}, 400, "crawl"),
            ({"urls": "https://c.example/" + "x" * (1024 * 1024)}, 413, "at most 1 MiB"),
        ]:
            answer = http(console.base + "/q/sown/action", {"action": "seed", "confirm": "yes", **form})
            assert answer[0] == status and said in answer[1], (form.get("priority"), answer[0], answer[1][:400])
        assert q.stats()["seeded_total"] == before, "a refused seed seeds nothing"
        log = console.log_lines()
        assert any("action=seed queue=sown: seeded 5 lines" in l for l in log), log
        assert any("action=seed queue=sown crawl=c1: seeded 2 lines" in l for l in log), log
        assert any("refused: form over 1 MiB" in l for l in log), log
    finally:
        console.stop()


def test_the_leased_page_lists_what_workers_hold_soonest_expiry_first(redis_url, browser):
    q = crawlq.Queue(redis_url, "held", **OPTIONS)
    assert q.seed([f"https://h{i}.example/p" for i in range(5)]).added == 5
    long = q.lease(2, wait=1.0, ttl=60.0)
    short = q.lease(1, wait=1.0, ttl=0.5)
    assert len(long) == 2 and len(short) == 1
    console = Console(redis_url)
    try:
        time.sleep(0.8)  # the short lease expires; nothing reclaims it
        browser.get(console.base + "/q/held")
        assert "Leased (3)" in text(browser, "#leased-link")
        follow(browser, browser.find_element(By.ID, "leased-link"))
        assert number(browser, "#leased-total") == 3
        assert number(browser, "#leased-expired") == 1
        rows = browser.find_elements(By.CSS_SELECTOR, "#leased tr[data-id]")
        assert [r.get_attribute("data-id") for r in rows][0] == short[0].id, "the expired lease first"
        assert rows[0].get_attribute("class") == "expired" and "ago" in rows[0].text
        assert {r.get_attribute("data-id") for r in rows[1:]} == {l.id for l in long}
        by_id = {l.id: l for l in short + long}
        for row in rows:
            lease = by_id[row.get_attribute("data-id")]
            assert lease.url in row.text and lease.host in row.text
            assert row.find_elements(By.CSS_SELECTOR, "td")[4].text == "1", "the lease's attempt"
        shot(browser, "leased")
        reclaimed = q.reclaim()  # (max_attempts 1: the expired lease's item is a dead letter now)
        assert reclaimed["requeued"] + reclaimed["dead"] == 1, reclaimed
        browser.refresh()
        assert number(browser, "#leased-total") == 2
        assert browser.find_elements(By.ID, "leased-expired") == []
        q.ack(long)
        browser.refresh()
        assert number(browser, "#leased-total") == 0
        assert browser.find_elements(By.ID, "nothing-leased")
    finally:
        console.stop()


def test_a_page_waiting_on_prometheus_holds_no_other_page(redis_url, shop):
    """A Prometheus that takes the connection and never answers keeps the queue page waiting
    (the console reads it for at most 5 s); the console's pages that do not read Prometheus are
    answered meanwhile."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    silent.settimeout(30)
    console = Console(redis_url, "--prometheus", f"http://127.0.0.1:{silent.getsockname()[1]}")
    slow: dict = {}

    def load_queue_page():
        started = time.monotonic()
        with urllib.request.urlopen(console.base + "/q/shop?range=1h", timeout=60) as r:
            slow["status"], slow["body"] = r.status, r.read().decode()
        slow["took"] = time.monotonic() - started

    waiting = threading.Thread(target=load_queue_page)
    try:
        waiting.start()
        asked, _ = silent.accept()  # the queue page is waiting on Prometheus from here on
        for path, expected in [("/", "shop"), ("/q/shop/hosts", "shop"), ("/q/shop/dead", "shop")]:
            status, body, _ = http(console.base + path)
            assert status == 200 and expected in body, (path, status, body[:300])
        assert waiting.is_alive(), "the other pages were answered while the queue page waited"
        waiting.join(60)
        asked.close()
        assert slow["status"] == 200 and "Prometheus could not be read" in slow["body"], slow
        assert slow["took"] >= 4.5, slow["took"]
    finally:
        waiting.join(60)
        console.stop()
        silent.close()


def test_a_redis_that_goes_away_is_an_error_page_until_it_is_back():
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="crawlq-console-gone.")
    argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", workdir]

    def start():
        server = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                return server
            except OSError:
                time.sleep(0.05)
        raise AssertionError("redis-server did not start")

    server = start()
    url = f"redis://127.0.0.1:{port}/0"
    crawlq.Queue(url, "flaky", **OPTIONS).seed(["https://f.example/"])
    console = Console(url, "--queue", "flaky", "-o", "connect_timeout=0.5", "-o", "command_timeout=1")
    try:
        assert http(console.base + "/q/flaky")[0] == 200
        server.kill()
        server.wait()
        status, body, _ = http(console.base + "/q/flaky")
        assert status == 502 and "Redis error" in body and "unavailable" in body, body
        assert http(console.base + "/healthz")[0] == 200, "the console itself keeps serving"
        server = start()
        crawlq.Queue(url, "flaky", **OPTIONS).seed(["https://f.example/"])
        status, body, _ = http(console.base + "/q/flaky")
        assert status == 200 and 'id="pending">1<' in body, "the next page after Redis is back"
    finally:
        console.stop()
        server.kill()
        server.wait()
        shutil.rmtree(workdir, ignore_errors=True)


def test_the_hosts_page_shows_the_slowest_the_paused_and_those_with_a_budget(redis_url, browser):
    views = crawlq.Queue(redis_url, "views", **OPTIONS)
    views.set_host_budget("budget.example", 10)
    views.seed([f"https://big.example/{i}" for i in range(5)] + ["https://slow.example/", "https://paused.example/1",
                "https://paused.example/2"] + [f"https://budget.example/{i}" for i in range(3)])
    views.set_host_delay("slow.example", 30)
    views.pause_host("paused.example", None)
    console = Console(redis_url)
    try:
        def hosts(order):
            browser.get(console.base + f"/q/views/hosts?order={order}")
            return [r.get_attribute("data-host") for r in browser.find_elements(By.CSS_SELECTOR, "#hosts tr[data-host]")]

        assert hosts("largest")[0] == "big.example"
        assert hosts("slowest")[0] == "slow.example"
        assert "among the 4 largest" in text(browser, "#hosts-shown")
        assert hosts("paused") == ["paused.example"]
        assert "paused" in browser.find_element(By.CSS_SELECTOR, 'tr[data-host="paused.example"]').text
        assert hosts("budget") == ["budget.example"]
        assert "3 / 10" in browser.find_element(By.CSS_SELECTOR, 'tr[data-host="budget.example"]').text
        shot(browser, "hosts-budget")
    finally:
        console.stop()


def test_without_a_token_only_loopback_names_are_answered(redis_url, shop):
    """A page of another site whose name resolves to 127.0.0.1 (DNS rebinding) gets nothing."""
    console = Console(redis_url)
    try:
        port = console.base.rsplit(":", 1)[1]
        for host in (f"127.0.0.1:{port}", f"localhost:{port}"):
            assert http(console.base + "/q/shop", headers={"Host": host})[0] == 200, host
        status, body, _ = http(console.base + "/q/shop", headers={"Host": f"rebound.example:{port}"})
        assert status == 403 and "loopback" in body and 'id="pending"' not in body
        dead = shop.stats()["dead"]
        status, _, _ = http(console.base + "/q/shop/action", {"action": "purge-dead", "confirm": "yes"},
                            {"Host": f"rebound.example:{port}", "Origin": f"http://rebound.example:{port}"})
        assert status == 403 and shop.stats()["dead"] == dead
    finally:
        console.stop()


def test_named_crawls_are_listed_and_paused_limited_and_deleted_from_their_page(redis_url, browser):
    q = crawlq.Queue(redis_url, "jobs", **OPTIONS)
    assert q.seed([f"https://n{i % 3}.example/news/{i}" for i in range(6)], crawl="news").added == 6
    assert q.seed([f"https://n{i % 3}.example/shop/{i}" for i in range(4)], crawl="shop").added == 4
    q.set_crawl_cap("shop", 3)
    crawlq.Queue(redis_url, "plain", **OPTIONS).seed(["https://p.example/"])
    console = Console(redis_url)
    try:
        # news worked a little: its acks are in its done/s (crawl_stats's rates)
        for _ in range(4):
            leases = q.lease(1, wait=0.2)
            q.ack(leases)
            time.sleep(0.3)
        news, shop = q.crawl_stats("news"), q.crawl_stats("shop")
        browser.get(console.base + "/q/jobs")
        follow(browser, browser.find_element(By.ID, "crawls-link"))
        assert browser.current_url.endswith("/q/jobs/crawls")
        rows = {r.get_attribute("data-crawl"): [c.text for c in r.find_elements(By.TAG_NAME, "td")]
                for r in browser.find_elements(By.CSS_SELECTOR, "#crawls tr[data-crawl]")}
        assert set(rows) == {"news", "shop"}
        for name, stats in (("news", news), ("shop", shop)):
            assert rows[name][1:7] == [str(stats[k]) for k in ("pending", "ready", "delayed", "leased", "dead", "done")], (name, rows[name], stats)
        assert rows["shop"][9] == "cap 3", rows["shop"]
        assert rows["news"][9] == "-", rows["news"]
        done = sum(stats["done"] for stats in (news, shop))
        assert done == 4
        worked = "news" if news["done"] else "shop"
        assert float(rows[worked][7]) > 0, f"{worked}'s acks counted into its done/s: {rows[worked]}"
        shot(browser, "crawls")

        follow(browser, browser.find_element(By.LINK_TEXT, "shop"))
        assert number(browser, "#crawl-pending") == shop["pending"]
        assert number(browser, "#crawl-hosts") == shop["hosts"]
        assert (text(browser, "#crawl-oldest-pending") == "-") == (shop["oldest_pending_age"] is None)
        assert text(browser, "#crawl-cap") == "3"
        assert text(browser, "#crawl-paused") == "no"
        assert len(browser.find_elements(By.CSS_SELECTOR, "figure.chart")) == 2
        assert click_action(browser, "pause-crawl") == "paused crawl shop"
        assert text(browser, "#crawl-paused") == "yes"
        assert q.crawl_stats("shop")["paused"]
        leases = q.lease(20, wait=0.3)
        assert leases and {l.crawl for l in leases} == {"news"}, "a paused crawl is not leased"
        q.release(leases)
        shot(browser, "crawl")
        assert click_action(browser, "resume-crawl") == "resumed crawl shop"
        assert text(browser, "#crawl-paused") == "no"
        leases = q.lease(20, wait=0.3)
        assert "shop" in {l.crawl for l in leases}, "leased again once resumed"
        q.release(leases)

        # its limits set from its page, each confirmed first
        for action, field, value in (("crawl-cap", "cap", "5"), ("crawl-weight", "weight", "2"),
                                     ("crawl-rate", "rate", "2.5"), ("crawl-host-budget", "budget", "40")):
            form = browser.find_element(By.CSS_SELECTOR, f'button[data-action="{action}"]').find_element(By.XPATH, "..")
            form.find_element(By.NAME, field).send_keys(value)
            assert click_action(browser, action).startswith("set crawl shop's")
        stats = q.crawl_stats("shop")
        assert (stats["cap"], stats["weight"], stats["rate"], stats["host_budget"]) == (5, 2, 2.5, 40), stats
        assert (text(browser, "#crawl-cap"), text(browser, "#crawl-weight")) == ("5", "2")
        form = browser.find_element(By.CSS_SELECTOR, 'button[data-action="crawl-cap"]').find_element(By.XPATH, "..")
        form.find_element(By.NAME, "cap").send_keys("none")
        assert click_action(browser, "crawl-cap") == "set crawl shop's cap"
        assert q.crawl_stats("shop")["cap"] is None
        status, body, _ = http(console.base + "/q/jobs/action",
                               {"action": "crawl-weight", "crawl": "shop", "weight": "0", "back": "/q/jobs"})
        assert status == 400 and "not a weight from 1" in body, "refused before its confirmation"

        # deleted from its page: back to the crawls, without it
        pending = q.crawl_stats("shop")["pending"]
        assert click_action(browser, "delete-crawl") == f"deleted crawl shop: {pending} ready, 0 delayed, 0 leased, 0 dead"
        assert urllib.parse.urlsplit(browser.current_url).path == "/q/jobs/crawls"
        assert [r.get_attribute("data-crawl") for r in browser.find_elements(By.CSS_SELECTOR, "#crawls tr[data-crawl]")] == ["news"]
        assert q.crawl_stats("shop")["pending"] == 0

        status, _, _ = http(console.base + "/q/jobs/crawl/nosuch")
        assert status == 404, "a crawl the queue does not have is not found"
        status, body, _ = http(console.base + "/q/jobs/action", {"action": "pause-crawl", "back": "/q/jobs", "confirm": "yes"})
        assert status == 400 and "pause-crawl needs a crawl" in body, (status, body[:500])
        status, body, _ = http(console.base + "/q/plain")
        assert status == 200 and 'id="crawls-link"' not in body, "a queue without named crawls has no crawls link"
        log = console.log_lines()
        assert any("action=pause-crawl queue=jobs crawl=shop: paused crawl shop" in l for l in log), log
        assert any("action=resume-crawl queue=jobs crawl=shop: resumed crawl shop" in l for l in log), log
        assert any("action=delete-crawl queue=jobs crawl=shop: deleted crawl shop" in l for l in log), log
    finally:
        console.stop()
    read_only = Console(redis_url, "--read-only")
    try:
        status, body, _ = http(read_only.base + "/q/jobs/crawl/news")
        assert status == 200 and "data-action" not in body, "no action offered"
        status, body, _ = http(read_only.base + "/q/jobs/action", {"action": "pause-crawl", "crawl": "news", "confirm": "yes"})
        assert status == 403 and "read-only" in body
        assert not q.crawl_stats("news")["paused"]
    finally:
        read_only.stop()


def test_long_listings_page_by_offset(redis_url):
    q = crawlq.Queue(redis_url, "long", **OPTIONS)
    for i in range(101):
        assert q.seed([f"https://crawls.example/{i}"], crawl=f"c{i:03d}").added == 1
    assert q.seed([f"https://one.example/{i:02d}" for i in range(51)]).added == 51
    assert q.seed([f"https://gone{i}.example/" for i in range(101)], crawl="dying").added == 101
    leases = q.lease(300, wait=0.5)
    assert len(leases) == 253
    for lease in leases:
        if lease.crawl == "dying":
            q.nack(lease, retry=False, reason="gone")
        else:
            q.release(lease)
    assert q.stats()["dead"] == 101
    console = Console(redis_url)
    try:
        next_link = re.compile(r'<a id="next-page" href="([^"]+)">Next</a>')
        for path, row, first_page, second_page in (
            ("/q/long/crawls", r'<tr data-crawl="([^"]+)"', 100, 2),  # 102 crawls: "dying" too
            ("/q/long/host/one.example", r'<td class="url">([^<]+)</td>', 50, 1),
            ("/q/long/dead", r'<tr data-id="([^"]+)"', 100, 1),
        ):
            status, body, _ = http(console.base + path)
            assert status == 200, (path, body[:300])
            assert len(re.findall(row, body)) == first_page, path
            assert "Previous" not in body
            nxt = next_link.search(body)
            assert nxt, f"{path}: a Next link"
            status, body, _ = http(console.base + nxt.group(1).replace("&amp;", "&"))
            assert status == 200
            assert len(re.findall(row, body)) == second_page, (path, nxt.group(1))
            assert "Previous" in body and not next_link.search(body), f"{path}: the last page"
    finally:
        console.stop()


def test_a_named_queue_with_no_record_of_an_item_is_said_to_be_so(redis_url):
    # (a misspelt --queue reads as an empty queue: the list and its page say it has no record)
    used = crawlq.Queue(redis_url, "used-name", **OPTIONS)
    assert used.seed(["https://used.example/1"]).added == 1
    leases = used.lease(1, wait=0.5)
    assert used.ack(leases[0]) is True  # drained: empty, but with a record of an item
    console = Console(redis_url, "--queue", "used-name", "--queue", "never-used-name")
    try:
        status, body, _ = http(console.base + "/")
        assert status == 200, body[:300]
        rows = dict(re.findall(r'<tr data-queue="([^"]+)">(.*?)</tr>', body))
        assert set(rows) == {"used-name", "never-used-name"}
        assert ">no record</span>" in rows["never-used-name"]
        assert "no record" not in rows["used-name"]
        status, body, _ = http(console.base + "/q/never-used-name")
        assert status == 200
        assert 'id="no-record"' in body and "misspelt --queue" in body
        status, body, _ = http(console.base + "/q/used-name")
        assert status == 200
        assert 'id="no-record"' not in body
    finally:
        console.stop()
    assert not crawlq.Queue(redis_url, "never-used-name", **OPTIONS).stats()["seeded_total"]


def test_a_queue_is_removed_from_its_page_once_its_workers_hold_nothing(redis_url, browser):
    raw = redis.Redis.from_url(redis_url)
    q = crawlq.Queue(redis_url, "gone", **OPTIONS)
    urls = [f"https://g{i % 3}.example/{i}" for i in range(9)]
    assert q.seed(urls[:6]).added == 6
    assert q.seed(urls[6:], crawl="news").added == 3
    q.set_host_delay("g1.example", 2.0)
    held = q.lease(1, wait=1.0)
    assert len(held) == 1
    neighbour = crawlq.Queue(redis_url, "gone-not", **OPTIONS)
    assert neighbour.seed(urls[:2]).added == 2
    console = Console(redis_url)
    try:
        browser.get(console.base + "/q/gone")
        # refused while an item is leased: nothing is removed
        follow(browser, browser.find_element(By.CSS_SELECTOR, 'button[data-action="remove-queue"]'))
        assert "Refused while items are leased" in text(browser, "#confirm-what")
        follow(browser, browser.find_element(By.ID, "confirm"))
        assert "Not done" in browser.title or "Not done" in browser.page_source
        assert "1 leased items: stop its workers first" in browser.page_source
        stats = q.stats()
        assert (stats["pending"], stats["leased"]) == (8, 1), stats

        q.release(held)
        browser.get(console.base + "/q/gone")
        flash = click_action(browser, "remove-queue")
        assert re.fullmatch(r"removed queue gone: \d+ Redis keys deleted", flash), flash
        assert int(flash.split(": ")[1].split()[0]) > 9
        assert urllib.parse.urlsplit(browser.current_url).path == "/", "back to the list"
        listed = [r.get_attribute("data-queue") for r in browser.find_elements(By.CSS_SELECTOR, "#queues tr[data-queue]")]
        assert "gone" not in listed and "gone-not" in listed, listed
        assert list(raw.scan_iter(match="crawlq:{gone}*")) == []
        assert neighbour.stats()["pending"] == 2, "a queue whose name starts the same is untouched"
        # the console's readings after the removal make nothing again
        time.sleep(1.2)
        assert list(raw.scan_iter(match="crawlq:{gone}*")) == []
        # a new queue under the name: its URLs seeded again
        again = crawlq.Queue(redis_url, "gone", **OPTIONS)
        assert again.seed(urls[:6]).added == 6
        assert again.seed(urls[6:], crawl="news").added == 3
        assert again.crawl_stats("news")["pending"] == 3
        log = console.log_lines()
        assert any("action=remove-queue queue=gone: refused" in l or "action=remove-queue queue=gone: failed" in l for l in log), log
        assert any("action=remove-queue queue=gone: removed queue gone" in l for l in log), log
    finally:
        console.stop()
        for name in ("gone", "gone-not"):
            crawlq.Queue(redis_url, name, **OPTIONS).remove_queue(even_if_leased=True)


def test_a_deletion_that_outlasts_its_request_goes_on_in_the_background(redis_url, browser):
    """--background-after 0: every deletion is answered at once and goes on in a task of its
    own; the pages show it under way, then its outcome. Redis's writes are held back with
    CLIENT PAUSE so that the deletion is seen under way."""
    raw = redis.Redis.from_url(redis_url)
    q = crawlq.Queue(redis_url, "bulk", **OPTIONS)
    urls = [f"https://b{i % 20}.example/{i}" for i in range(3000)]
    assert q.seed(urls, crawl="old").added == 3000
    assert q.seed(["https://keep.example/"], crawl="kept").added == 1
    delete = {"action": "delete-crawl", "crawl": "old", "back": "/q/bulk/crawls", "confirm": "yes"}
    console = Console(redis_url, "--queue", "bulk", "--background-after", "0")
    try:
        raw.execute_command("CLIENT", "PAUSE", "1500", "WRITE")
        status, _, headers = http(console.base + "/q/bulk/action", delete)
        assert status == 303, status
        flash = urllib.parse.parse_qs(urllib.parse.urlsplit(headers["Location"]).query)["done"][0]
        assert re.fullmatch(r"deleting crawl old in the background(, [\d,]+ items removed so far)?: "
                            r"every page shows its progress until it ends", flash), flash
        # the same deletion again while it runs: refused, nothing started twice
        status, body, _ = http(console.base + "/q/bulk/action", delete)
        assert status == 409 and "crawl old of queue bulk is being deleted already" in body, (status, body[:400])
        assert re.search(r"<li>deleting crawl old of queue bulk \(for [^<]+\)</li>", body), "listed under way"

        # its outcome is shown on every page once it ended
        def shown(d):
            d.get(console.base + "/q/bulk")
            lines = [li.text for li in d.find_elements(By.CSS_SELECTOR, "#deletions li")]
            return lines if lines and lines[0].startswith("queue bulk: deleted crawl old") else False
        lines = WebDriverWait(browser, 30, poll_frequency=0.3).until(shown)
        assert re.fullmatch(r"queue bulk: deleted crawl old: 3000 ready, 0 delayed, 0 leased, 0 dead \(.+ ago\)", lines[0]), lines
        shot(browser, "deletion-ended")
        stats = q.stats()
        assert (stats["pending"], q.crawl_stats("kept")["pending"]) == (1, 1), stats
        status, body, _ = http(console.base + "/")
        assert status == 200 and "queue bulk: deleted crawl old: 3000 ready" in body, "on every page"

        # a deletion under way is listed with its progress: the page refusing it again shows it
        # (that page reads nothing from Redis)
        assert q.seed([f"https://b{i % 20}.example/again/{i}" for i in range(30_000)], crawl="again").added == 30_000
        delete["crawl"] = "again"
        status, _, _ = http(console.base + "/q/bulk/action", delete)
        assert status == 303, status
        seen = []
        for _ in range(500):
            status, body, _ = http(console.base + "/q/bulk/action", delete)
            if status != 409:
                break
            seen += re.findall(r"<li>(deleting crawl again of queue bulk[^<]*)</li>", body)
            if any("items removed so far" in line for line in seen):
                break
        assert any(re.fullmatch(r"deleting crawl again of queue bulk: [\d,]+ items removed so far \(for .+\)", line)
                   for line in seen), seen
        WebDriverWait(browser, 60, poll_frequency=0.3).until(
            lambda d: d.get(console.base + "/q/bulk") or any(
                li.text.startswith("queue bulk: deleted crawl again: 30000 ready") for li in d.find_elements(By.CSS_SELECTOR, "#deletions li")))
        assert q.crawl_stats("again")["pending"] == 0
        log = console.log_lines()
        assert any("action=delete-crawl queue=bulk crawl=old: deleted crawl old: 3000 ready" in l for l in log), log
        assert any("action=delete-crawl queue=bulk crawl=old: refused: crawl old of queue bulk is being deleted already" in l
                   for l in log), log

        # the console stopped while a deletion runs: it says so, and deleting again ends it
        assert q.seed([u + "?3" for u in urls], crawl="third").added == 3000
        console = Console(redis_url, "--queue", "bulk", "--background-after", "0")
        raw.execute_command("CLIENT", "PAUSE", "3000", "WRITE")
        delete["crawl"] = "third"
        status, _, _ = http(console.base + "/q/bulk/action", delete)
        assert status == 303, status
        log = console.log_lines()
        assert any("action=stop queue=-: the deletion of crawl third of queue bulk stopped part-way: delete it again to end it" in l
                   for l in log), log
        raw.execute_command("CLIENT", "UNPAUSE")
        gone = q.delete_crawl("third")
        assert gone["ready"] + gone["delayed"] + gone["leased"] + gone["dead"] <= 3000, gone
        assert q.crawl_stats("third")["pending"] == 0
        assert q.stats()["pending"] == 1

        # a crawl whose deletion stopped part-way: shown as being deleted, only its deletion offered
        assert q.seed([u + "?4" for u in urls], crawl="stuck").added == 3000

        def stop(so_far):
            if so_far["removed"] > 0:
                raise LookupError(so_far["removed"])
        with pytest.raises(LookupError):
            q.delete_crawl("stuck", progress=stop)
        left = q.crawl_stats("stuck")["ready"]
        assert 0 < left < 3000 and q.crawl_stats("stuck")["deleting"]
        console = Console(redis_url, "--queue", "bulk")
        browser.get(console.base + "/q/bulk/crawls")
        row = browser.find_element(By.CSS_SELECTOR, '#crawls tr[data-crawl="stuck"]')
        assert row.find_elements(By.TAG_NAME, "td")[9].text == "being deleted"
        follow(browser, row.find_element(By.LINK_TEXT, "stuck"))
        assert text(browser, "#crawl-paused").startswith("being deleted"), text(browser, "#crawl-paused")
        for action in ("resume-crawl", "pause-crawl", "crawl-cap"):
            assert not browser.find_elements(By.CSS_SELECTOR, f'button[data-action="{action}"]'), action
        shot(browser, "crawl-being-deleted")
        assert click_action(browser, "delete-crawl") == f"deleted crawl stuck: {left} ready, 0 delayed, 0 leased, 0 dead"
        assert not q.crawl_stats("stuck")["deleting"]
    finally:
        raw.execute_command("CLIENT", "UNPAUSE")
        console.stop()
        q.remove_queue(even_if_leased=True)


def test_a_host_deletion_and_a_queue_removal_go_on_in_the_background(redis_url, browser):
    """--background-after 0: a host's deletion and the queue's removal
    answer at once, then show their outcome; the removed queue leaves the list once it ended."""
    q = crawlq.Queue(redis_url, "bgq", **OPTIONS)
    assert q.seed([f"https://gone.example/{i}" for i in range(2000)] + ["https://stay.example/"]).added == 2001
    console = Console(redis_url, "--background-after", "0")
    try:
        browser.get(console.base + "/q/bgq/host/gone.example")
        flash = click_action(browser, "delete-host")  # the first button: its items, kept as seen

        def outcome(flash, what, done):
            """The deletion's outcome: in its flash when it ended before the answer (a busy
            machine may run it first even with 0 s), else shown on every page once it ended.
            The flash of one under way tells how far it got when it had already reported."""
            if flash.startswith(done):
                return flash
            # (a host's deletion counts items, a queue's removal the Redis keys it deleted)
            assert re.fullmatch(rf"deleting {re.escape(what)} in the background"
                                r"(, [\d,]+ (items removed|Redis keys deleted) so far)?: "
                                r"every page shows its progress until it ends", flash), flash

            def shown(d):
                d.get(console.base + "/")
                return [li.text for li in d.find_elements(By.CSS_SELECTOR, "#deletions li")
                        if li.text.startswith(f"queue bgq: {done}")]
            line = WebDriverWait(browser, 30, poll_frequency=0.3).until(shown)[0]
            assert re.fullmatch(r"queue bgq: (.+) \(.+ ago\)", line), line
            return line.split(": ", 1)[1].rsplit(" (", 1)[0]
        done = outcome(flash, "host gone.example", "deleted host gone.example")
        assert done == "deleted host gone.example: 2000 ready, 0 delayed, 0 leased, 0 dead, 0 forgotten", done
        assert q.stats()["pending"] == 1

        browser.get(console.base + "/q/bgq")
        flash = click_action(browser, "remove-queue")
        done = outcome(flash, "queue bgq", "removed queue bgq")
        assert re.fullmatch(r"removed queue bgq: \d+ Redis keys deleted", done), done
        browser.get(console.base + "/")
        listed = [r.get_attribute("data-queue") for r in browser.find_elements(By.CSS_SELECTOR, "#queues tr[data-queue]")]
        assert "bgq" not in listed, listed
        assert q.stats()["pending"] == 0
        log = console.log_lines()
        assert any("action=delete-host queue=bgq host=gone.example: deleted host gone.example: 2000 ready" in l for l in log), log
        assert any("action=remove-queue queue=bgq: removed queue bgq" in l for l in log), log
    finally:
        console.stop()
        q.remove_queue(even_if_leased=True)


def test_the_deletions_page_reloads_itself_until_the_deletion_ends(redis_url, browser):
    """A deletion going on in the background is linked from every page to the deletions page,
    which has no form and reloads itself while one runs: its outcome appears there without a
    reload by hand, and then the page stops reloading. Redis's writes are held back with CLIENT
    PAUSE so that the deletion is seen under way."""
    raw = redis.Redis.from_url(redis_url)
    q = crawlq.Queue(redis_url, "followed", **OPTIONS)
    assert q.seed([f"https://f{i % 20}.example/{i}" for i in range(20_000)], crawl="big").added == 20_000
    delete = {"action": "delete-crawl", "crawl": "big", "back": "/q/followed/crawls", "confirm": "yes"}
    console = Console(redis_url, "--queue", "followed", "--background-after", "0")
    try:
        status, body, _ = http(console.base + "/deletions")
        assert status == 200 and "No deletion is under way." in body and 'http-equiv="refresh"' not in body, body[:2000]
        assert "follow-deletions" not in body

        raw.execute_command("CLIENT", "PAUSE", "2000", "WRITE")
        status, _, _ = http(console.base + "/q/followed/action", delete)
        assert status == 303, status
        # every page links to it while the deletion runs (the refusal of the same deletion
        # again is such a page, and reads nothing from Redis)
        status, body, _ = http(console.base + "/q/followed/action", delete)
        assert status == 409, (status, body[:400])
        assert '<a id="follow-deletions" href="/deletions">Follow the progress</a>' in body, body[:3000]

        browser.get(console.base + "/deletions")
        refresh = browser.find_elements(By.CSS_SELECTOR, 'meta[http-equiv="refresh"]')
        assert [m.get_attribute("content") for m in refresh] == ["2"], "reloads while one runs"
        assert text(browser, "#deletions-reloading").startswith("This page reloads itself every 2 s")
        lines = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#deletion-list li")]
        assert any(line.startswith("deleting crawl big of queue followed") for line in lines), lines
        assert not browser.find_elements(By.CSS_SELECTOR, "form"), "nothing to lose to a reload"
        shot(browser, "deletions-under-way")

        # the page is left alone: it reloads itself until the outcome is on it
        browser.execute_script("window.crawlqOldPage = true")

        def ended(d):
            try:
                return [li.text for li in d.find_elements(By.CSS_SELECTOR, "#deletion-list li")
                        if li.text.startswith("queue followed: deleted crawl big")]
            except WebDriverException:
                return False
        line = WebDriverWait(browser, 60, poll_frequency=0.3).until(ended)[0]
        assert re.fullmatch(r"queue followed: deleted crawl big: 20000 ready, 0 delayed, 0 leased, 0 dead \(.+ ago\)", line), line
        assert browser.execute_script("return !window.crawlqOldPage"), "a reload of its own brought it"
        # no deletion under way: the page stops reloading (a reload may still be on its way)
        def quiet(d):
            try:
                return text(d, "#deletions-reloading") == "No deletion is under way."
            except WebDriverException:
                return False
        WebDriverWait(browser, 10, poll_frequency=0.3).until(quiet)
        assert not browser.find_elements(By.CSS_SELECTOR, 'meta[http-equiv="refresh"]')
        assert q.crawl_stats("big")["pending"] == 0
        # other pages list the outcome without the link
        status, body, _ = http(console.base + "/")
        assert status == 200 and "queue followed: deleted crawl big: 20000 ready" in body, body[:3000]
        assert "follow-deletions" not in body
    finally:
        raw.execute_command("CLIENT", "UNPAUSE")
        console.stop()
        q.remove_queue(even_if_leased=True)
