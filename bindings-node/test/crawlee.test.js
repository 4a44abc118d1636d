'use strict'
// crawlq/crawlee: the Crawlee request manager on a real redis-server, by its methods and by
// a real BasicCrawler (the multi-process crawl of a local site is tests/frameworks/).
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
// Crawlee keeps crawler statistics on disk: in a scratch folder, not the working directory,
// removed when the tests end (one the caller named is theirs and stays).
const scratchStorage = process.env.CRAWLEE_STORAGE_DIR ? null : fs.mkdtempSync(path.join(os.tmpdir(), 'crawlq-crawlee-'))
if (scratchStorage) process.env.CRAWLEE_STORAGE_DIR = scratchStorage
const { Request, RequestState } = require('@crawlee/core')
const { BasicCrawler } = require('@crawlee/basic')
const { crawlq, startRedis, uniqueName } = require('./harness.js')
const { CrawlqRequestManager } = require('../crawlee.js')

let redis
before(async () => { redis = await startRedis() })
after(async () => {
  await redis.stop()
  if (scratchStorage) fs.rmSync(scratchStorage, { recursive: true, force: true })
})

const quick = { backoffBaseMs: 1, backoffJitter: 0 }
const manage = async (name = uniqueName('crawlee'), queueOptions = quick) => {
  const queue = await crawlq.Queue.connect(redis.url, name, queueOptions)
  return new CrawlqRequestManager(queue, { waitMs: 200, releaseOnSignal: false })
}

test('addRequestsBatched seeds by uniqueKey in one call, reports duplicates, skips an invalid URL', async () => {
  const m = await manage()
  const { addedRequests, waitForAllRequestsToBeAdded } = await m.addRequestsBatched([
    'http://a.com/1',
    'http://a.com/1#section', // the same uniqueKey
    { url: 'http://a.com/1', method: 'POST', payload: 'q=1', useExtendedUniqueKey: true },
    'http://[broken/',
    new Request({ url: 'http://b.com/', userData: { label: 'home' } })
  ])
  assert.deepEqual(addedRequests.map(r => r.wasAlreadyPresent), [false, true, false, false])
  const postKey = Request.computeUniqueKey({ url: 'http://a.com/1', method: 'POST', payload: 'q=1', useExtendedUniqueKey: true })
  assert.deepEqual(addedRequests.map(r => r.uniqueKey), ['http://a.com/1', 'http://a.com/1', postKey, 'http://b.com'])
  assert.ok(addedRequests.every(r => r.wasAlreadyPresent ? r.requestId === '' : r.requestId.length > 0))
  assert.deepEqual(await waitForAllRequestsToBeAdded, addedRequests)
  const stats = await m.queue.stats()
  assert.deepEqual([stats.pending, stats.duplicatesTotal], [3, 1])
  assert.equal(m.getTotalCount(), 0, 'no stats read yet: the offline count is 0')
  assert.equal(await m.isEmpty(), false)
  assert.equal(m.getTotalCount(), 3)
  const again = await m.addRequest('http://a.com/1')
  assert.equal(again.wasAlreadyPresent, true)
})

test('the crawl option seeds into a named crawl, de-duplicated within it', async () => {
  const name = uniqueName('crawlee-crawl')
  const queue = await crawlq.Queue.connect(redis.url, name, quick)
  await queue.seed(['http://a.com/1'])
  const m = new CrawlqRequestManager(queue, { waitMs: 200, releaseOnSignal: false, crawl: 'shop' })
  const { addedRequests } = await m.addRequestsBatched(['http://a.com/1', 'http://a.com/1'])
  assert.deepEqual(addedRequests.map(r => r.wasAlreadyPresent), [false, true])
  const leases = await queue.lease({ max: 10, waitMs: 0 })
  assert.deepEqual(leases.map(l => l.crawl ?? '').sort(), ['', 'shop'])
  queue.close()
})

test('leaseCrawls in the queue options makes the manager fetch only its crawls', async () => {
  const name = uniqueName('crawlee-lease-crawls')
  const plain = await crawlq.Queue.connect(redis.url, name, quick)
  await plain.seed(['http://a.com/default/0', 'http://a.com/default/1'])
  await plain.seed(['http://a.com/news/0', 'http://a.com/news/1'], { crawl: 'news' })
  const queue = await crawlq.Queue.connect(redis.url, name, { ...quick, hostDelayMs: 0, leaseCrawls: 'shop' })
  const m = new CrawlqRequestManager(queue, { waitMs: 200, releaseOnSignal: false, crawl: 'shop' })
  await m.addRequestsBatched(['http://b.com/shop/0', 'http://b.com/shop/1'])
  const fetched = []
  for (let request; (request = await m.fetchNextRequest()) !== null;) {
    fetched.push(request.url)
    await m.markRequestHandled(request)
  }
  assert.deepEqual(fetched.sort(), ['http://b.com/shop/0', 'http://b.com/shop/1'], "its crawl's requests only")
  assert.equal((await plain.crawlStats('news')).pending, 2)
  assert.equal((await plain.stats()).pending, 4)
  queue.close()
  plain.close()
})

test('open takes leaseCrawls for the queue it opens, and refuses it twice', async () => {
  const name = uniqueName('crawlee-open-lease-crawls')
  const plain = await crawlq.Queue.connect(redis.url, name, quick)
  await plain.seed(['http://a.com/default/0'])
  await plain.seed(['http://a.com/news/0', 'http://a.com/news/1'], { crawl: 'news' })
  const m = await CrawlqRequestManager.open(redis.url, name,
    { waitMs: 200, releaseOnSignal: false, crawl: 'news', leaseCrawls: ['news'], queueOptions: { ...quick, hostDelayMs: 0 } })
  const fetched = []
  for (let request; (request = await m.fetchNextRequest()) !== null;) {
    fetched.push(request.url)
    await m.markRequestHandled(request)
  }
  assert.deepEqual(fetched.sort(), ['http://a.com/news/0', 'http://a.com/news/1'], "its crawl's requests only")
  assert.equal((await plain.stats()).pending, 1)
  await m.close()
  await assert.rejects(CrawlqRequestManager.open(redis.url, name, { leaseCrawls: ['news'], queueOptions: { leaseCrawls: 'news' } }),
    e => e instanceof TypeError && /both set/.test(e.message))
  await assert.rejects(CrawlqRequestManager.open(redis.url, name, { leaseCrawls: ['ne ws'] }),
    e => e.code === 'ERR_CRAWLQ_CONFIG' && e.message.includes('got "ne ws"'))
  plain.close()
})

test('a fetched request is rebuilt whole: method, bytes body, headers, userData, label; its lease rides along', async () => {
  const m = await manage()
  const body = Buffer.from([0, 1, 2, 255])
  await m.addRequest({ url: 'http://a.com/form', method: 'POST', payload: body, headers: { 'x-a': '1' }, userData: { n: 1 }, label: 'FORM' })
  const request = await m.fetchNextRequest()
  assert.ok(request instanceof Request)
  assert.equal(request.method, 'POST')
  assert.deepEqual(request.payload, body)
  assert.deepEqual(request.headers, { 'x-a': '1' })
  assert.equal(request.label, 'FORM')
  assert.equal(request.userData.n, 1)
  assert.equal(request.retryCount, 0)
  const lease = m.leaseOf(request)
  assert.equal(lease.id, request.id)
  assert.equal(lease.attempt, 1)
  assert.equal(await m.fetchNextRequest(), null, 'nothing else queued: null after waitMs')
  await m.markRequestHandled(request)
  assert.equal(m.leaseOf(request), null)
  assert.equal((await m.queue.stats()).done, 1)
})

test('a reclaim after a failure stores the new retryCount: another process sees it; a delayed start is a release', async () => {
  const name = uniqueName('crawlee')
  const a = await manage(name)
  const b = await manage(name)
  await a.addRequest('http://a.com/flaky')
  const request = await a.fetchNextRequest()
  request.state = RequestState.ERROR_HANDLER
  request.pushErrorMessage(new Error('503 - try again'))
  request.retryCount++
  await a.reclaimRequest(request)
  const retried = await b.fetchNextRequest()
  assert.equal(retried.url, 'http://a.com/flaky')
  assert.equal(retried.retryCount, 1)
  assert.match(retried.errorMessages[0], /503 - try again/)
  assert.equal(b.leaseOf(retried).attempt, 2)
  assert.equal(b.leaseOf(retried).lastError, '503 - try again')
  // Crawlee reclaims without a failure when it postpones a start (sameDomainDelaySecs)
  retried.state = RequestState.REQUEST_HANDLER
  await b.reclaimRequest(retried)
  const again = await a.fetchNextRequest()
  assert.equal(again.retryCount, 1)
  assert.equal(a.leaseOf(again).attempt, 2, 'a release does not count an attempt')
  const stats = await a.queue.stats()
  assert.deepEqual([stats.retriedTotal, stats.releasedTotal], [1, 1])
})

test('handled after a failure is a dead letter with the last error; a robots.txt skip is one too', async () => {
  const m = await manage()
  await m.addRequestsBatched(['http://a.com/gone', 'http://b.com/private'])
  const [gone, secret] = [await m.fetchNextRequest(), await m.fetchNextRequest()]
  gone.state = RequestState.ERROR_HANDLER
  gone.pushErrorMessage(new Error('HTTP 404'))
  await m.markRequestHandled(gone)
  secret.state = RequestState.SKIPPED
  await m.markRequestHandled(secret)
  const dead = await m.queue.dead()
  assert.deepEqual(dead.map(d => [d.url, d.lastError]).sort(), [
    ['http://a.com/gone', 'HTTP 404'],
    ['http://b.com/private', 'ignored: skipped by the crawler (robots.txt)']
  ])
  assert.equal(await m.handledCount(), 2)
  assert.equal(await m.isFinished(), true)
})

test('a URL seeded by a worker in another language becomes a GET whose userData is its payload', async () => {
  const m = await manage()
  await m.queue.seed([{ url: 'http://a.com/x', payload: { label: 'DETAIL', depth: 2 } }, { host: 'c.com' }])
  const leased = []
  for (let i = 0; i < 2; i++) {
    const r = await m.fetchNextRequest()
    if (r) leased.push(r)
  }
  assert.equal(leased.length, 1)
  assert.deepEqual([leased[0].url, leased[0].method, leased[0].label, leased[0].userData.depth], ['http://a.com/x', 'GET', 'DETAIL', 2])
  const dead = await m.queue.dead()
  assert.deepEqual(dead.map(d => [d.host, d.lastError]), [['c.com', 'undecodable: protocol mismatch: a host item has no URL to fetch: it is not a crawl request']])
})

test('answering a request this process does not hold changes nothing', async () => {
  const m = await manage()
  const stranger = new Request({ url: 'http://a.com/', id: 'nope' })
  assert.equal(await m.markRequestHandled(stranger), null)
  assert.equal(await m.reclaimRequest(stranger), null)
})

test('close releases the leases still held and stops fetching', async () => {
  const m = await manage()
  await m.addRequestsBatched(['http://a.com/1', 'http://b.com/2', 'http://c.com/3'])
  await m.fetchNextRequest()
  await m.fetchNextRequest()
  await m.close()
  assert.equal(await m.fetchNextRequest(), null)
  const stats = await m.queue.stats()
  assert.deepEqual([stats.leased, stats.ready, stats.releasedTotal], [0, 3, 2])
})

test('leases in flight are extended by the queue (extendEveryMs) while their request runs', async () => {
  const queue = await crawlq.Queue.connect(redis.url, uniqueName('crawlee'), { leaseTtlMs: 300, extendEveryMs: 100 })
  const m = new CrawlqRequestManager(queue, { releaseOnSignal: false })
  await m.addRequest('http://a.com/slow')
  const request = await m.fetchNextRequest()
  await new Promise(resolve => setTimeout(resolve, 700)) // past the first deadline
  assert.equal(await queue.ack(m.leaseOf(request)), true, 'the lease is still live after twice its ttl')
  await m.close()
})

test('SIGTERM releases what the process holds, then ends it as SIGTERM would', async () => {
  const name = uniqueName('crawlee')
  const m = await manage(name)
  await m.addRequestsBatched(['http://a.com/1', 'http://b.com/2', 'http://c.com/3'])
  const child = spawn(process.execPath, ['-e', `
    const { CrawlqRequestManager } = require(${JSON.stringify(path.resolve(__dirname, '..', 'crawlee.js'))})
    const { crawlq } = require(${JSON.stringify(path.join(__dirname, 'harness.js'))})
    crawlq.Queue.connect(${JSON.stringify(redis.url)}, ${JSON.stringify(name)}).then(async q => {
      const m = new CrawlqRequestManager(q)
      await m.fetchNextRequest(); await m.fetchNextRequest()
      console.log('holding'); setInterval(() => {}, 1000)
    })`], { stdio: ['ignore', 'pipe', 'inherit'] })
  await new Promise(resolve => child.stdout.once('data', resolve))
  assert.equal((await m.queue.stats()).leased, 2)
  const exited = new Promise(resolve => child.once('exit', (code, signal) => resolve(signal)))
  child.kill('SIGTERM')
  assert.equal(await exited, 'SIGTERM')
  const stats = await m.queue.stats()
  assert.deepEqual([stats.leased, stats.releasedTotal], [0, 2])
})

test('a BasicCrawler on the manager: retries stop at maxRequestRetries, then a dead letter', async () => {
  const m = await manage(uniqueName('crawlee'), { ...quick, maxAttempts: 10 })
  const attempts = new Map()
  const crawler = new BasicCrawler({
    requestQueue: m,
    maxRequestRetries: 2,
    useSessionPool: false,
    async requestHandler ({ request, enqueueLinks }) {
      attempts.set(request.url, (attempts.get(request.url) ?? 0) + 1)
      if (request.url.endsWith('/broken')) throw new Error('always fails')
      if (request.url.endsWith('/start')) await crawler.addRequests(['http://a.com/broken', 'http://a.com/ok', 'http://a.com/start'])
    }
  })
  crawler.log.setLevel(crawler.log.LEVELS.OFF)
  await crawler.run(['http://a.com/start'])
  assert.deepEqual(Object.fromEntries(attempts), { 'http://a.com/start': 1, 'http://a.com/broken': 3, 'http://a.com/ok': 1 })
  const stats = await m.queue.stats()
  assert.deepEqual([stats.done, stats.dead, stats.retriedTotal, await m.isFinished()], [2, 1, 2, true])
  const [dead] = await m.queue.dead()
  assert.deepEqual([dead.url, dead.attempts, dead.lastError], ['http://a.com/broken', 3, 'always fails'])
  await m.close()
})

test('a CheerioCrawler with postNavigationHook: a 429 with Retry-After holds the retry and the host that long', async () => {
  const { CheerioCrawler } = require('@crawlee/cheerio')
  const http = require('node:http')
  const log = []
  let busy = 0
  const server = http.createServer((req, res) => {
    const at = Date.now()
    if (req.url === '/busy' && busy++ === 0) {
      res.writeHead(429, { 'Retry-After': '2', 'Content-Type': 'text/html' }).end('slow down')
    } else {
      res.writeHead(200, { 'Content-Type': 'text/html' }).end('<html><body>ok</body></html>')
    }
    log.push({ path: req.url, at, done: Date.now() })
  })
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
  const base = `http://127.0.0.1:${server.address().port}`
  // one request of the host at a time: the next one is leased after the 429 is answered
  const m = await manage(uniqueName('crawlee-429'), { ...quick, hostInFlight: 1 })
  try {
    const crawler = new CheerioCrawler({
      requestQueue: m,
      maxRequestRetries: 2,
      // (Crawlee retries a 429 as a blocked request of its session pool, on by default)
      postNavigationHooks: [m.postNavigationHook],
      async requestHandler () {}
    })
    crawler.log.setLevel(crawler.log.LEVELS.OFF)
    await crawler.run([`${base}/busy`, `${base}/other`])
  } finally {
    server.close()
  }
  const busyFetches = log.filter(r => r.path === '/busy')
  assert.equal(busyFetches.length, 2)
  const limited = busyFetches[0]
  const after = log.filter(r => r.at > limited.at)
  assert.ok(after.length >= 1)
  // the retry and every request to the host waited out the Retry-After (whole ms on both clocks)
  assert.ok(Math.min(...after.map(r => r.at)) - limited.done >= 2000 - 5, JSON.stringify(log))
  const stats = await m.queue.stats()
  assert.deepEqual([stats.done, stats.dead, stats.retriedTotal], [2, 0, 1])
  const info = await m.queue.hostInfo('127.0.0.1')
  assert.ok(info.adaptiveExtraMs > 0, 'a 429 is a rate limit: the host slows down')
  await m.close()
})

test('a CheerioCrawler with preNavigationHook: each redirect hop waits for its host\'s turn, spaced from that host\'s leases', async () => {
  const { CheerioCrawler } = require('@crawlee/cheerio')
  const http = require('node:http')
  const log = []
  const server = http.createServer((req, res) => {
    const host = req.headers.host.split(':')[0]
    // when the request may go to the host: a hop when it arrives, a leased request when it
    // was leased (Crawlee starts its first fetches a while after leasing them)
    const hop = req.url === '/middle' || req.url === '/landing'
    log.push({ host, path: req.url, at: hop ? Date.now() : Number(req.headers['x-leased-at']) })
    const port = server.address().port
    if (req.url === '/start') {
      res.writeHead(302, { Location: '/middle' }).end()
    } else if (req.url === '/middle') {
      res.writeHead(301, { Location: `http://127.0.0.2:${port}/landing` }).end()
    } else {
      res.writeHead(200, { 'Content-Type': 'text/html' }).end('<html><body>ok</body></html>')
    }
  })
  await new Promise(resolve => server.listen(0, '0.0.0.0', resolve))
  const port = server.address().port
  const delay = 400
  const m = await manage(uniqueName('crawlee-redirect'), { ...quick, hostDelayMs: delay })
  const landed = []
  try {
    const crawler = new CheerioCrawler({
      requestQueue: m,
      maxConcurrency: 4,
      preNavigationHooks: [
        m.preNavigationHook,
        ({ request }, gotOptions) => {
          gotOptions.headers = { ...gotOptions.headers, 'x-leased-at': String(m.leaseOf(request).leasedAt) }
        }
      ],
      async requestHandler ({ request }) { landed.push(request.loadedUrl) }
    })
    crawler.log.setLevel(crawler.log.LEVELS.OFF)
    await crawler.run([
      `http://127.0.0.1:${port}/start`, `http://127.0.0.1:${port}/other`,
      `http://127.0.0.2:${port}/one`, `http://127.0.0.2:${port}/two`
    ])
  } finally {
    server.close()
  }
  assert.equal(log.length, 6, JSON.stringify(log))
  assert.ok(landed.includes(`http://127.0.0.2:${port}/landing`), JSON.stringify(landed))
  for (const host of ['127.0.0.1', '127.0.0.2']) {
    const starts = log.filter(r => r.host === host).sort((a, b) => a.at - b.at)
    assert.equal(starts.length, 3)
    for (let i = 1; i < starts.length; i++) {
      // A hop arrives after its turn (whole ms on the Redis and the local clock); the next
      // lease comes its delay after the turn, which is before the hop arrived: on two busy
      // cores a hop once arrived 62 ms after its turn. A lease not spaced from the hop's turn
      // would come within a few ms of the hop, far under the delay less this slack.
      const hopBefore = starts[i - 1].path === '/middle' || starts[i - 1].path === '/landing'
      const slack = hopBefore ? 120 : 5
      assert.ok(starts[i].at - starts[i - 1].at >= delay - slack, `${host}: ${JSON.stringify(log)}`)
    }
  }
  const stats = await m.queue.stats()
  assert.deepEqual([stats.done, stats.dead], [4, 0])
  await m.close()
})

test('preNavigationHook: a request the crawler held past heldTurnMs waits for its host\'s turn (none while the host is paused: it fails); a prompt one goes at once', async () => {
  const m = await manage(uniqueName('crawlee-held'))
  await m.addRequestsBatched(['http://a.com/1', 'http://a.com/2'])
  const prompt = await m.fetchNextRequest()
  const late = await m.fetchNextRequest()
  // as if the crawler had waited a second for a.com's robots.txt before starting `late`
  m.inFlight.get(late.id).handedAt -= 1000
  await m.queue.pauseHost('a.com')
  const crawler = { navigationTimeoutMillis: 150 }
  // the prompt request started in its lease's turn (as if handed over just now, however slow
  // this machine is): no new turn needed, the pause is not consulted
  m.inFlight.get(prompt.id).handedAt = Date.now()
  await m.preNavigationHook({ request: prompt, crawler }, {})
  await assert.rejects(m.preNavigationHook({ request: late, crawler }, {}), /no turn of the host of http:\/\/a\.com\/2 within 150 ms after the crawler held it/)
  await m.queue.resumeHost('a.com')
  await m.preNavigationHook({ request: late, crawler }, {})
  // a request this process does not hold is left alone
  await m.preNavigationHook({ request: new Request({ url: 'http://a.com/3' }), crawler }, {})
  await m.close()
})

test('linksWithAnswer: links kept for an answer that fails are kept for the next one', async () => {
  const name = uniqueName('crawlee-kept')
  const queue = await crawlq.Queue.connect(redis.url, name, quick)
  const m = new CrawlqRequestManager(queue, { waitMs: 200, releaseOnSignal: false, linksWithAnswer: true })
  await m.addRequestsBatched(['http://a.com/', 'http://b.com/'])
  const first = await m.fetchNextRequest()
  const second = await m.fetchNextRequest()
  // found while both pages are held: kept for the next answer
  await m.addRequestsBatched(['http://x.com/found'])
  // another program's value where the queue keeps x.com's lane: the answer fails whole
  const lane = `crawlq:{${name}}:l:0:x.com`
  redis.cli('SET', lane, 'not a list')
  await assert.rejects(m.markRequestHandled(first), err => err.code === 'ERR_CRAWLQ_CORRUPT')
  let stats = await queue.stats()
  assert.deepEqual([stats.done, stats.seen], [0, 2], 'nothing acked or seeded by the failed answer')
  redis.cli('DEL', lane)
  // the next answer carries the kept link: found on a page of this process, it is not lost
  await m.markRequestHandled(second)
  stats = await queue.stats()
  assert.deepEqual([stats.done, stats.seen, stats.ready], [1, 3, 1], 'the second page acked with the kept link')
  const [next] = await queue.lease({ max: 1, waitMs: 0 })
  assert.equal(next.url, 'http://x.com/found')
  await m.close()
})

test('linksWithAnswer: links added while a page is held go with its ack in one call; a failed page sends them first', async () => {
  const queue = await crawlq.Queue.connect(redis.url, uniqueName('crawlee-links'), { ...quick, maxPayloadBytes: 4096 })
  const m = new CrawlqRequestManager(queue, { waitMs: 200, releaseOnSignal: false, linksWithAnswer: true })
  const calls = () => redis.cli('INFO', 'commandstats').split('\n')
    .filter(line => /^cmdstat_(fcall|evalsha):/.test(line))
    .reduce((n, line) => n + Number(/calls=(\d+)/.exec(line)[1]), 0)
  // nothing held: seeded at once (the start URLs)
  await m.addRequestsBatched(['http://a.com/'])
  const page = await m.fetchNextRequest()
  const before = calls()
  const { addedRequests } = await m.addRequestsBatched([
    'http://a.com/1', 'http://b.com/', 'http://a.com/',
    new Request({ url: 'http://a.com/big', userData: { blob: 'x'.repeat(5000) } })
  ])
  assert.deepEqual(addedRequests.map(r => [r.wasAlreadyPresent, r.requestId]), [[false, ''], [false, ''], [false, ''], [false, '']])
  assert.equal(calls(), before, 'kept until the page is answered')
  await m.markRequestHandled(page)
  assert.equal(calls(), before + 1, 'the ack and its links: one call')
  let stats = await queue.stats()
  assert.deepEqual([stats.done, stats.pending, stats.seen], [1, 2, 3], 'the page itself was seen, the one too big refused')
  // a page that fails: its answer sends the kept links on their own first
  const second = await m.fetchNextRequest()
  await m.addRequestsBatched(['http://c.com/'])
  second.state = RequestState.ERROR_HANDLER
  await m.reclaimRequest(second)
  stats = await queue.stats()
  assert.equal(stats.seen, 4)
  await m.close()
})
