'use strict'
// The crawler of the Crawlee framework test: a CheerioCrawler that follows every link of the
// local test site through a crawlq request manager. Run by tests/frameworks/run.py, several
// processes at once on one frontier (CRAWLQ_URL, CRAWLQ_QUEUE, START_URL, HOST_DELAY_MS and
// WORKER come from the environment; NODE_PATH points at bindings-node/node_modules).

const path = require('node:path')
const { CheerioCrawler, NonRetryableError } = require('@crawlee/cheerio')
const { CrawlqRequestManager } = require(path.join(process.env.CRAWLQ_NODE, 'crawlee.js'))

async function main () {
  const requestManager = await CrawlqRequestManager.open(process.env.CRAWLQ_URL, process.env.CRAWLQ_QUEUE, {
    queueOptions: {
      hostDelayMs: Number(process.env.HOST_DELAY_MS),
      backoffBaseMs: 200,
      // ?a=1&b=2 and ?b=2&a=1 are one page, as for every crawler of the test
      sortQuery: true,
      leaseTtlMs: Number(process.env.LEASE_TTL ?? 30) * 1000
    },
    // a page's links go with its ack: one call per page
    linksWithAnswer: true,
    ...(process.env.HELD_TURN_MS ? { heldTurnMs: Number(process.env.HELD_TURN_MS) } : {})
  })
  const agent = `site-crawler/${process.env.WORKER}`
  const crawler = new CheerioCrawler({
    // Given as `requestQueue`: Crawlee 3.18's option check refuses its own `requestManager`
    // option, and takes any object with fetchNextRequest and addRequest as a request queue.
    requestQueue: requestManager,
    maxConcurrency: 8,
    // the held site: robots.txt read before each host's first request (the request manager's
    // preNavigationHook spaces the requests held meanwhile)
    respectRobotsTxtFile: process.env.ROBOTS === '1',
    maxRequestRetries: 3,
    useSessionPool: false,
    // a redirect the HTTP client follows, and a request held for robots.txt, wait for their
    // host's turn; a 429's Retry-After holds the host
    postNavigationHooks: [requestManager.postNavigationHook],
    preNavigationHooks: [
      requestManager.preNavigationHook,
      ({ request }, gotOptions) => {
        // Tells the test site when crawlq leased the request (seconds, the Redis clock), so it
        // can check politeness by lease times as well as by arrival times.
        const lease = requestManager.leaseOf(request)
        gotOptions.headers = { ...gotOptions.headers, 'user-agent': agent, 'x-crawlq-leased-at': String(lease.leasedAt / 1000) }
      }
    ],
    async requestHandler ({ request, response, $, enqueueLinks, pushData }) {
      if (response.statusCode === 404) throw new NonRetryableError('HTTP 404')
      await pushData({ url: request.url, title: $('h1').text() })
      // who seeded a link rides in its request, for whichever framework fetches it
      await enqueueLinks({
        strategy: 'all',
        transformRequestFunction: (options) => ({ ...options, headers: { ...options.headers, 'x-seeded-by': 'crawlee' } })
      })
    }
  })
  await crawler.run([process.env.START_URL])
  await requestManager.close()
}

main().catch(err => {
  console.error(err)
  process.exit(1)
})
