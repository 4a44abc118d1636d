"""The demo's Python crawler: fetch, extract links, ack the page with its links (one call); until the frontier is
empty. Environment: REDIS_URL, CRAWLQ_QUEUE, SITE_ORIGINS (comma-separated origins it may follow)."""

import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request

import crawlq

origins = tuple(os.environ["SITE_ORIGINS"].split(","))
q = crawlq.Queue(os.environ["REDIS_URL"], os.environ["CRAWLQ_QUEUE"], host_delay=0.1, max_attempts=2, backoff="fixed", backoff_base=0.2,
                  seen_cache=100_000)
fetched = failed = 0
while True:
    for lease in q.work(max=1, wait=2.0, stop_when_empty=True):
        try:
            # the header tells the demo's web server when the queue handed this URL out
            request = urllib.request.Request(lease.url, headers={"X-Crawlq-Leased-At": str(round(lease.leased_at * 1000))})
            html = urllib.request.urlopen(request, timeout=5).read().decode()
        except urllib.error.HTTPError as err:
            q.nack(lease, retry=err.code >= 500, reason=f"HTTP {err.code}")
            failed += 1
            continue
        except OSError as err:
            q.nack(lease, reason=str(err))
            failed += 1
            continue
        links = (urllib.parse.urljoin(lease.url, href) for href in re.findall(r'href="([^"#]+)"', html))
        # the page's ack and its links in one round trip; links the cache knows cost no Redis work
        q.ack_with_links(lease, [link for link in links if link.startswith(origins)])
        fetched += 1
    stats = q.stats()
    if stats["pending"] == 0 and stats["leased"] == 0:
        break
print(json.dumps({"lang": "python", "fetched": fetched, "failed": failed}))
