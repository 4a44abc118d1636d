'use strict'
// Every operation of the Queue.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { pathToFileURL } = require('node:url')
const { crawlq, modulePath, startRedis, uniqueName, T0 } = require('./harness.js')

let redis
before(async () => { redis = await startRedis() })
after(async () => { await redis.stop() })

const open = (opts) => crawlq.Queue.connect(redis.url, uniqueName('q'), opts)
// the script calls (FCALL, EVALSHA, EVAL) the test's server has run
const scriptCalls = () => {
  const stats = redis.cli('INFO', 'commandstats')
  return ['fcall', 'evalsha', 'eval'].reduce((n, c) => n + Number((stats.match(new RegExp(`cmdstat_${c}:calls=(\\d+)`)) || [0, 0])[1]), 0)
}

test('the package exports the names protocol.js lists, to require() and to ES modules', async () => {
  const entry = require.resolve(modulePath)
  const { API_NAMES } = require(path.join(path.dirname(entry), 'protocol.js'))
  // imported, the CommonJS entry's named exports are the `exports.name =` lines Node.js finds
  // in it; a package with an ES module entry too (index.mjs) exports them there
  const mjs = path.join(path.dirname(entry), 'index.mjs')
  const imported = [entry, ...(fs.existsSync(mjs) ? [mjs] : [])]
  const adapters = ['nodeRedisTransport', 'ioredisTransport']
  assert.deepEqual(Object.keys(crawlq).filter(n => !adapters.includes(n)).sort(), [...API_NAMES].sort())
  for (const file of imported) {
    const esm = await import(pathToFileURL(file))
    for (const name of API_NAMES) {
      assert.equal(typeof crawlq[name], 'function', name)
      assert.equal(typeof esm[name], 'function', `${name} imported from ${path.basename(file)}`)
    }
  }
})

test('seed reports added, duplicates and invalid items with their index', async () => {
  const q = await open()
  const report = await q.seed(['http://a.com/1', 'HTTP://A.com:80/1#x', 'ftp://a.com/', 'Example.COM.', ''])
  assert.equal(report.added, 2)
  assert.equal(report.duplicates, 1)
  assert.deepEqual(report.invalid.map(i => [i.index, i.input, i.code]), [[2, 'ftp://a.com/', 'unsupported_scheme'], [4, '', 'empty']])
  assert.match(report.invalid[0].reason, /only http and https/)
  assert.equal((await q.stats()).ready, 2)
  assert.deepEqual(report.ids.map(id => id !== null), [true, false, false, true, false])
  const leases = await q.lease({ max: 10, waitMs: 0 })
  assert.deepEqual(leases.map(l => l.id).sort(), [report.ids[0], report.ids[3]].sort(), "a lease carries its seed's id")
})

test('seed takes one string, item objects and batch options', async () => {
  const q = await open()
  assert.equal((await q.seed('http://one.com/')).added, 1)
  const report = await q.seed([
    { url: 'http://a.com/', priority: 5, payload: { k: [1, 2.5, null, true] } },
    { host: 'b.com', delayMs: 60_000 },
    'http://c.com/'
  ], { payload: { batch: 1 } })
  assert.equal(report.added, 3)
  const leases = await q.lease({ max: 10, waitMs: 0 })
  assert.deepEqual(leases.map(l => [l.url, l.priority, l.payload]), [
    ['http://a.com/', 5, { k: [1, 2.5, null, true] }],
    ['http://one.com/', 0, null],
    ['http://c.com/', 0, { batch: 1 }]
  ])
  assert.equal((await q.stats()).delayed, 1)
})

test('every call that takes a list takes any iterable, read in order before anything is sent', async () => {
  const q = await open()
  const report = await q.seed(new Set(['http://a.com/1', 'mailto:x@a.com', 'http://a.com/1']))
  assert.deepEqual([report.added, report.invalid.map(i => [i.index, i.code])], [1, [[1, 'unsupported_scheme']]])
  assert.equal((await q.seed((function * () { yield 'http://b.com/1'; yield { url: 'http://b.com/2', priority: 3 } })())).added, 2)
  assert.equal((await q.seedRequests(new Map([['k', { url: 'http://c.com/', method: 'POST', body: 'q=1' }]]).values())).added, 1)
  const [page] = await q.lease({ waitMs: 0 })
  const answer = await q.ackWithLinks(page, new Set(['next.html']))
  assert.deepEqual([answer.acked, answer.links.added], [true, 1])
  assert.equal((await q.stats()).seen, 5)
  // an iterator that throws rejects the call with its error, and nothing of it is seeded
  const failing = (function * () { yield 'http://d.com/1'; throw new RangeError('no more') })()
  await assert.rejects(q.seed(failing), err => err instanceof RangeError && err.message === 'no more')
  assert.equal((await q.stats()).seen, 5, 'nothing of the failed call was sent')
  // an object that is not iterable is refused as before
  await assert.rejects(q.seed(new Date()), err => err instanceof TypeError && err.code === 'ERR_INVALID_ARG_TYPE')
  await q.close()
})

test('a lease has every field, and ack answers once', async () => {
  const q = await open()
  await q.seed(['http://a.com/x'], { payload: { depth: 1 } })
  const [lease] = await q.lease({ waitMs: 1000 })
  assert.deepEqual(Object.keys(lease).sort(), ['attempt', 'crawl', 'enqueuedAt', 'expiresAt', 'host', 'id', 'key', 'lastError', 'leasedAt', 'payload', 'priority', 'token', 'url'])
  assert.equal(lease.key, null, 'seeded without a key')
  assert.equal(lease.crawl, null, 'seeded into the default crawl')
  assert.equal(lease.id, '1')
  assert.equal(lease.host, 'a.com')
  assert.equal(lease.attempt, 1)
  assert.equal(lease.lastError, null)
  assert.equal(lease.expiresAt - lease.leasedAt, 120_000)
  assert.ok(lease.enqueuedAt <= lease.leasedAt)
  assert.equal(await q.ack(lease), true)
  assert.equal(await q.ack(lease), false, 'a second ack is stale')
  const stats = await q.stats()
  assert.deepEqual([stats.done, stats.leased, stats.pending], [1, 0, 0])
})

test('priority first, then arrival order; batches answer per lease', async () => {
  const q = await open()
  await q.seed(['http://a.com/1', 'http://b.com/1', 'http://a.com/2'])
  await q.seed([{ url: 'http://c.com/1', priority: 9 }])
  const leases = await q.lease({ max: 10, waitMs: 0 })
  assert.deepEqual(leases.map(l => l.url), ['http://c.com/1', 'http://a.com/1', 'http://b.com/1', 'http://a.com/2'])
  assert.deepEqual(await q.ack(leases), [true, true, true, true])
  assert.deepEqual(await q.lease({ max: 5, waitMs: 0 }), [])
})

test('ackAndLease acks and takes the next items in one script call', async () => {
  const q = await open()
  await q.seed(['http://a.com/1', 'http://b.com/1', 'http://c.com/1', 'http://d.com/1'])
  const [first] = await q.lease({ waitMs: 0 })
  const warm = await q.ackAndLease(first, { waitMs: 0 })
  assert.deepEqual([warm.acked, warm.leases.map(l => l.url)], [true, ['http://b.com/1']])
  redis.cli('CONFIG', 'RESETSTAT')
  const { acked, leases } = await q.ackAndLease(warm.leases[0], { waitMs: 0 })
  assert.equal(scriptCalls(), 1, 'one script call')
  assert.equal(acked, true)
  assert.deepEqual(leases.map(l => l.url), ['http://c.com/1'])
  assert.equal(typeof leases[0].token, 'number')
  // an array: one flag per lease, a stale one false; max takes what is left
  const more = await q.ackAndLease([first, leases[0]], { max: 5, waitMs: 0 })
  assert.deepEqual(more.acked, [false, true])
  assert.deepEqual(more.leases.map(l => l.url), ['http://d.com/1'])
  // nothing ready: the ack is applied and the lease waits waitMs
  const started = Date.now()
  const last = await q.ackAndLease(more.leases, { waitMs: 300 })
  assert.deepEqual(last, { acked: [true], leases: [] })
  assert.ok(Date.now() - started >= 250)
  const stats = await q.stats()
  assert.deepEqual([stats.done, stats.leased, stats.pending], [4, 0, 0])
  await assert.rejects(q.ackAndLease(first, { max: 0 }), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT' })
  await assert.rejects(q.ackAndLease('http://a.com/1'), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT' })
})

test('leasedItems lists what workers hold, soonest expiry first, expired ones until reclaimed', async () => {
  const q = await open({ fixedClock: T0, leaseTtlMs: 60_000, hostDelayMs: 0 })
  assert.deepEqual(await q.leasedItems(), { total: 0, now: T0, items: [] })
  await q.seed(['http://a.com/1', 'http://b.com/1', 'http://c.com/1'])
  const long = await q.lease({ max: 2, waitMs: 0 })
  const [short] = await q.lease({ waitMs: 0, ttlMs: 5_000 })
  const page = await q.leasedItems()
  assert.deepEqual([page.total, page.now, page.items.length], [3, T0, 3])
  const { leasedAt, ...asListed } = short
  assert.deepEqual(page.items[0], asListed, 'the 5 s lease first, as its Lease shows it')
  assert.deepEqual(page.items.slice(1).map(i => i.id).sort(), long.map(l => l.id).sort())
  assert.deepEqual((await q.leasedItems({ limit: 1, offset: 1 })).items, [page.items[1]])
  q._setFixedClock(T0 + 5_001)
  const later = await q.leasedItems()
  assert.ok(later.total === 3 && later.items[0].expiresAt < later.now, 'expired, listed until reclaimed')
  await q.ack(long)
  assert.deepEqual((await q.leasedItems()).items.map(i => i.id), [short.id])
  await assert.rejects(q.leasedItems({ limit: -1 }), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT' })
})

test('nack retries with backoff, then dead letters can be listed, requeued and purged', async () => {
  const q = await open({ fixedClock: T0, maxAttempts: 2, backoff: 'fixed', backoffBaseMs: 30_000, backoffJitter: 0 })
  await q.seed(['http://n.com/1', 'http://n.com/2'])
  const [first, second] = await q.lease({ max: 2, waitMs: 0 })
  assert.equal(await q.nack(first, { reason: 'HTTP 503' }), 'retried')
  assert.equal(await q.nack(second, { retry: false, reason: 'HTTP 404' }), 'dead')
  assert.equal(await q.nack(first), 'lost')
  q._setFixedClock(T0 + 29_999)
  assert.deepEqual(await q.lease({ waitMs: 0 }), [])
  q._setFixedClock(T0 + 30_000)
  const [again] = await q.lease({ waitMs: 0 })
  assert.deepEqual([again.attempt, again.lastError], [2, 'HTTP 503'])
  assert.deepEqual(await q.nack([again], { delayMs: 0 }), ['dead'])
  const dead = await q.dead()
  assert.deepEqual(dead.map(d => [d.url, d.attempts, d.lastError]), [['http://n.com/2', 1, 'HTTP 404'], ['http://n.com/1', 2, 'HTTP 503']])
  assert.equal(dead[0].diedAt, T0)
  assert.deepEqual(await q.deadLetters([dead[1].id, 'nope', dead[0].id]), [dead[1], null, dead[0]])
  assert.deepEqual(await q.deadLetters([]), [])
  await assert.rejects(q.deadLetters(dead[0].id), { name: 'TypeError', message: /ids must be an array of strings/ })
  assert.equal((await q.dead({ limit: 1, offset: 1 }))[0].url, 'http://n.com/1')
  assert.equal(await q.requeueDead([dead[0].id, 'nope']), 1)
  assert.equal(await q.requeueDead(), 1)
  assert.equal((await q.lease({ max: 5, waitMs: 0 })).length, 2)
  assert.equal(await q.purgeDead(), 0)
})

test('extend, release and reclaim', async () => {
  const q = await open({ fixedClock: T0, leaseTtlMs: 10_000 })
  await q.seed(['http://x.com/1', 'http://x.com/2'])
  const [a, b] = await q.lease({ max: 2, waitMs: 0 })
  q._setFixedClock(T0 + 5_000)
  assert.equal(await q.extend(a, 60_000), T0 + 65_000)
  assert.equal(await q.release(b), true)
  q._setFixedClock(T0 + 20_000)
  assert.deepEqual(await q.reclaim(), { requeued: 0, dead: 0, remaining: 0 })
  const [b2] = await q.lease({ waitMs: 0 })
  assert.deepEqual([b2.url, b2.attempt], ['http://x.com/2', 1])
  q._setFixedClock(T0 + 100_000)
  assert.deepEqual(await q.reclaim({ limit: 10 }), { requeued: 2, dead: 0, remaining: 0 })
  await assert.rejects(q.extend(a, 5_000), err => err.code === 'ERR_CRAWLQ_LEASE_LOST' && err.token === a.token && err.leaseId === a.id)
  assert.deepEqual(await q.extend([a, b2], 5_000), [null, null])
  assert.deepEqual(await q.release([a]), [false])
})

test('nack and release store a new payload for the next attempt', async () => {
  const q = await open({ maxPayloadBytes: 64 })
  await q.seed([{ url: 'http://p.com/1', payload: { retryCount: 0 } }, 'http://p.com/2'])
  const [a, b] = await q.lease({ max: 2, waitMs: 0 })
  assert.equal(await q.nack(a, { delayMs: 0, reason: 'HTTP 500', payload: { retryCount: 1 } }), 'retried')
  assert.equal(await q.release(b, { payload: [1, 'two'] }), true)
  const leases = Object.fromEntries((await q.lease({ max: 2, waitMs: 0 })).map(l => [l.url, l]))
  assert.deepEqual(leases['http://p.com/1'].payload, { retryCount: 1 })
  assert.deepEqual([leases['http://p.com/2'].payload, leases['http://p.com/2'].attempt], [[1, 'two'], 1])
  const held = leases['http://p.com/1']
  await assert.rejects(q.release(held, { payload: 'x'.repeat(100) }), err => err.code === 'ERR_CRAWLQ_INVALID_ARGUMENT' && /payload too large/.test(err.message))
  await assert.rejects(q.release(held, { payloads: 1 }), err => err.code === 'ERR_CRAWLQ_INVALID_ARGUMENT' && /unknown release option/.test(err.message))
  assert.equal(await q.ack(held), true, 'a refused payload changed nothing')
})

test('politeness and host settings', async () => {
  const q = await open({ fixedClock: T0, hostDelayMs: 2_000 })
  const info = await q.setHostDelay('HTTP://Slow.COM/x', 30_000)
  assert.deepEqual([info.host, info.delayMs], ['slow.com', 30_000])
  await q.seed(['http://slow.com/1', 'http://slow.com/2', 'http://fast.com/1', 'http://fast.com/2'])
  assert.deepEqual((await q.lease({ max: 10, waitMs: 0 })).map(l => l.url), ['http://slow.com/1', 'http://fast.com/1'])
  q._setFixedClock(T0 + 2_000)
  assert.deepEqual((await q.lease({ max: 10, waitMs: 0 })).map(l => l.url), ['http://fast.com/2'])
  assert.deepEqual(await q.hostInfo('slow.com'), { host: 'slow.com', delayMs: 30_000, adaptiveExtraMs: 0, ready: 1, heldUntil: T0 + 30_000, paused: false, pausedUntil: null, budget: null, budgetUsed: 0, budgetRemaining: null, deleting: false, inFlightLimit: null, inFlight: 0, full: false, delayFromRobots: false, delayAfter: null, delayFactor: null })
  assert.equal((await q.setHostDelay('slow.com', null)).delayMs, null)
})

test('a paused host is held through a blocking lease and resumeHost wakes it', async () => {
  const q = await open()
  const worker = await crawlq.Queue.connect(redis.url, q.name)
  await q.seed(['http://paused.com/1', 'http://open.com/1'])
  const info = await q.pauseHost('http://Paused.com/x')
  assert.deepEqual([info.host, info.paused, info.pausedUntil, info.ready], ['paused.com', true, null, 1])
  assert.deepEqual((await q.lease({ max: 10, waitMs: 0 })).map(l => l.url), ['http://open.com/1'])
  let leasedAt = null
  const waiting = worker.lease({ waitMs: 20_000 }).then(leases => { leasedAt = Date.now(); return leases })
  await new Promise(resolve => setTimeout(resolve, 500))
  assert.equal(leasedAt, null, 'leased a paused host')
  const resumedAt = Date.now()
  assert.equal((await q.resumeHost('paused.com')).paused, false)
  assert.deepEqual((await waiting).map(l => l.url), ['http://paused.com/1'])
  assert.ok(leasedAt - resumedAt < 5_000, 'woken by the resume, not by its wait running out')
  // a timed pause, by the Redis clock
  const timed = await q.pauseHost('open.com', 30_000)
  assert.ok(timed.paused && Math.abs(timed.pausedUntil - (Date.now() + 30_000)) < 5_000)
  await assert.rejects(q.pauseHost('open.com', -1), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT' })
  await assert.rejects(q.pauseHost('open.com', 'soon'), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT' })
  await assert.rejects(q.resumeHost('not a host'), { code: 'ERR_CRAWLQ_INVALID_ITEM' })
  worker.close()
})

test('a host budget refuses the URLs past it, each reported with its index', async () => {
  const q = await open()
  assert.equal((await q.setHostBudget('b.com', 2)).budgetRemaining, 2)
  const report = await q.seed(['http://b.com/1', 'http://b.com/2', 'http://b.com/3', 'http://c.com/1'])
  assert.equal(report.added, 3)
  assert.deepEqual(report.invalid.map(i => [i.index, i.input, i.code]), [[2, 'http://b.com/3', 'budget_exhausted']])
  await assert.rejects(q.setHostBudget('b.com', -1), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT' })
  await assert.rejects(q.setHostBudget('b.com', 1.5), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT' })
  await assert.rejects(q.setDefaultHostBudget('10'), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT' })
  assert.equal(await q.setDefaultHostBudget(10), undefined)
  assert.equal(await q.defaultHostBudget(), 10)
})

test('ack with a revisit at a time queues the URL again then', async () => {
  const q = await open({ fixedClock: T0 })
  await q.seed(['http://r.com/1'])
  const [lease] = await q.lease({ waitMs: 0 })
  assert.equal(await q.ack(lease, { revisitAt: T0 + 3_000 }), true)
  assert.equal((await q.stats()).revisits, 1)
  q._setFixedClock(T0 + 2_999)
  assert.deepEqual(await q.lease({ waitMs: 0 }), [])
  q._setFixedClock(T0 + 3_000)
  const [again] = await q.lease({ waitMs: 0 })
  assert.deepEqual([again.url, again.attempt], ['http://r.com/1', 1])
  await assert.rejects(q.ack(again, { revisitAfterMs: 1, revisitAt: T0 }), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT' })
  await assert.rejects(q.ack(again, { revisitAt: 'tomorrow' }), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT' })
  await assert.rejects(q.ack(again, { revisit: 1 }), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT' })
})

test('a rate-limited nack slows the host without counting an attempt', async () => {
  const q = await open({ fixedClock: T0, adaptiveDelayStepMs: 4_000 })
  await q.seed(['http://busy.com/1'])
  const [lease] = await q.lease({ waitMs: 0 })
  assert.equal(await q.nack(lease, { rateLimited: true }), 'retried')
  assert.equal((await q.hostInfo('busy.com')).adaptiveExtraMs, 4_000)
  assert.deepEqual(await q.lease({ waitMs: 0 }), [])
  q._setFixedClock(T0 + 4_000)
  const [again] = await q.lease({ waitMs: 0 })
  assert.equal(again.attempt, 1)
})

test('stats, peek and the oldest pending age', async () => {
  const q = await open({ fixedClock: T0 })
  await q.seed(['http://a.com/1', 'http://a.com/2', 'http://b.com/1'])
  q._setFixedClock(T0 + 2_500)
  const stats = await q.stats()
  assert.equal(stats.oldestPendingAgeMs, 2_500)
  assert.deepEqual([stats.pending, stats.ready, stats.hosts, stats.seen, stats.seededTotal], [3, 3, 2, 3, 3])
  const peeked = await q.peek()
  assert.deepEqual(peeked.map(p => p.url), ['http://a.com/1', 'http://b.com/1'])
  assert.equal(peeked[0].enqueuedAt, T0)
  assert.equal((await q.stats()).leased, 0)
})

test('a waiting lease wakes up when work is seeded', async () => {
  const q = await open()
  const started = Date.now()
  const waiting = q.lease({ waitMs: 20_000 })
  await new Promise(resolve => setTimeout(resolve, 200))
  await q.seed(['http://w.com/'])
  const leases = await waiting
  assert.equal(leases.length, 1)
  assert.ok(Date.now() - started < 10_000, 'woken by the seed, not the timeout')
})

test('the event loop keeps running while a lease waits', async () => {
  const q = await open()
  let ticks = 0
  const timer = setInterval(() => { ticks++ }, 10)
  await q.lease({ waitMs: 500 })
  clearInterval(timer)
  assert.ok(ticks >= 20, `timers ran during the wait (${ticks} ticks)`)
})

test('byte strings in payloads round-trip as bytes (Buffer or Uint8Array in, Uint8Array out)', async () => {
  const q = await open({ hostDelayMs: 0 })
  const body = Buffer.from(Array.from({ length: 256 }, (_, i) => i))
  await q.seed([{ url: 'http://b.com/1', payload: { body, empty: new Uint8Array(0), list: [new Uint8Array([0, 1]).subarray(1)] } }])
  const bytes = v => { assert.ok(v instanceof Uint8Array, `bytes come back as a Uint8Array, got ${typeof v}`); return [...v] }
  const [peeked] = await q.peek()
  assert.deepEqual(bytes(peeked.payload.list[0]), [1], 'a subarray is its own bytes')
  const [lease] = await q.lease({ waitMs: 0 })
  assert.deepEqual([bytes(lease.payload.body), bytes(lease.payload.empty)], [[...body], []])
  assert.equal(await q.nack(lease, { delayMs: 0, payload: Buffer.from([0xff]) }), 'retried')
  const [again] = await q.lease({ waitMs: 0 })
  assert.deepEqual(bytes(again.payload), [0xff])
  // only a one-key object whose value is canonical base64 stands for bytes
  assert.equal(await q.nack(again, { retry: false, payload: { $bytes: 'AP8K', other: 1 } }), 'dead')
  const [dead] = await q.dead()
  assert.deepEqual(dead.payload, { $bytes: 'AP8K', other: 1 })
})

test('payload values round-trip as plain JSON', async () => {
  const q = await open()
  const payload = { s: 'é "quoted"\n', n: -1.25, big: 2 ** 53 - 1, nested: { list: [[], {}, false] }, nil: null }
  await q.seed([{ url: 'http://p.com/', payload: { ...payload, skipped: undefined } }])
  const [lease] = await q.lease({ waitMs: 0 })
  assert.deepEqual(lease.payload, payload)
})

test('strings of every length around the addon\'s read buffer, with 2-, 3- and 4-byte characters, cross whole', async () => {
  // the addon reads a string into a 512-byte buffer first, and again at its full length when
  // it may have been cut short: the lengths here end on each side of that edge
  const q = await open()
  const strings = []
  for (const char of ['a', 'é', '€', '😀']) {
    for (let bytes = 496; bytes <= 520; bytes++) {
      const head = 'x'.repeat(bytes - Buffer.byteLength(char) * 2)
      strings.push(head + char + char)
    }
  }
  strings.push('😀'.repeat(2000), '')
  const report = await q.seed(strings.map((s, i) => ({ url: `http://long.com/${i}`, payload: { s } })))
  assert.equal(report.added, strings.length)
  const leases = await q.lease({ max: strings.length, waitMs: 0 })
  assert.deepEqual(leases.map(l => l.payload.s).sort(), [...strings].sort())
  // a page's links (strings, the common case) and a URL that is not valid, with their indexes
  const [page] = leases
  const links = Array.from({ length: 30 }, (_, i) => `http://links.com/${i}/${'p'.repeat(480 + i)}`)
  links.push('http://' + 'é'.repeat(300) + '.com/') // a host label over 63 characters
  const answered = await q.ackWithLinks(page, links)
  assert.equal(answered.acked, true)
  assert.equal(answered.links.added, 30)
  assert.deepEqual(answered.links.invalid.map(i => [i.index, i.input]), [[30, links[30]]])
  const stored = await q.lease({ max: 100, waitMs: 0 })
  assert.equal(stored.length, 30)
  for (const l of stored) assert.equal(l.url, links[Number(l.url.split('/')[3])])
})

async function allHosts (q, limit) {
  const out = []
  let cursor = null
  do {
    const page = await q.listHosts({ cursor, limit })
    assert.ok(page.hosts.length <= limit)
    out.push(...page.hosts)
    cursor = page.cursor
  } while (cursor !== null)
  return out
}

test('listHosts pages the hosts holding items, the most first, with exact counts', async () => {
  const q = await open({ hostDelayMs: 1000 })
  const seed = []
  for (let i = 0; i < 5; i++) seed.push(`http://big.com/${i}`)
  seed.push('http://mid.com/1', 'http://mid.com/2', { url: 'http://mid.com/later', delayMs: 60_000 }, 'http://one.com/')
  for (let i = 0; i < 3000; i++) seed.push(`http://h${i}.example/`)
  assert.equal((await q.seed(seed)).added, 3009)
  const leases = await q.lease({ max: 2, waitMs: 0 })
  assert.deepEqual(leases.map(l => l.host), ['big.com', 'mid.com'])
  assert.equal(await q.nack(leases[1], { retry: false }), 'dead')
  const hosts = await allHosts(q, 1000)
  assert.equal(hosts.length, 3003)
  assert.equal(new Set(hosts.map(h => h.host)).size, 3003, 'every host once')
  assert.deepEqual(hosts.slice(0, 2).map(h => [h.host, h.items, h.ready, h.delayed, h.leased, h.dead]),
    [['big.com', 5, 4, 0, 1, 0], ['mid.com', 3, 1, 1, 0, 1]])
  assert.ok(hosts.slice(2).every(h => h.items === 1 && h.ready === 1))
  assert.equal(hosts[2].host, 'h0.example')
  assert.ok(hosts[0].nextDue >= Date.now() - 5_000)
  const first = await q.listHosts({ limit: 1 })
  assert.equal(first.total, 3003)
  await assert.rejects(q.listHosts({ limit: 0 }), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT' })
  await assert.rejects(q.listHosts({ cursor: 'nope' }), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT' })
  await assert.rejects(q.listHosts({ cursor: 3 }), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT' })
})

test('removeQueue refuses while items are leased, then deletes every shard and the seen set', async () => {
  const q = await open({ shards: 3, seenCache: 1000 })
  const urls = []
  for (let h = 0; h < 6; h++) for (let i = 0; i < 5; i++) urls.push(`http://h${h}.com/${i}`)
  await q.seed(urls)
  const [lease] = await q.lease({ max: 1, waitMs: 0 })
  await assert.rejects(q.removeQueue(), e => e.code === 'ERR_CRAWLQ_INVALID_ARGUMENT' && /has 1 leased items/.test(e.message))
  await assert.rejects(q.removeQueue({ force: true }), e => e.code === 'ERR_CRAWLQ_INVALID_ARGUMENT' && /unknown option "force"; known: evenIfLeased/.test(e.message))
  assert.equal((await q.stats()).pending, 29, 'a refused removal changes nothing')
  assert.ok(await q.removeQueue({ evenIfLeased: true }) > 3)
  assert.equal(redis.cli('--scan', '--pattern', `*{${q.name}[}:]*`), '', 'no key of the queue or its shards is left')
  assert.equal(await q.ack(lease), false, 'a lease of the removed queue answers lost')
  // the same client seeds the same URLs into the queue made again: its cache does not answer
  const again = await q.seed(urls)
  assert.deepEqual([again.added, again.duplicates], [30, 0])
})

test('deleteHost mid-crawl: its leases answer lost and every count stays exact', async () => {
  const q = await open()
  const seed = []
  for (let h = 0; h < 10; h++) for (let i = 0; i < 40; i++) seed.push(`http://h${h}.com/${i}`)
  await q.seed(seed)
  let stop = false
  let acked = 0
  let lost = 0
  const workers = []
  for (let w = 0; w < 4; w++) {
    workers.push((async () => {
      const mine = await crawlq.Queue.connect(redis.url, q.name)
      while (!stop) {
        const leases = await mine.lease({ max: 5, waitMs: 50 })
        await new Promise(resolve => setTimeout(resolve, 2))
        for (const l of leases) {
          // ack resolves false for a lease that is no longer live (here: its host was deleted)
          if (await mine.ack(l)) {
            acked++
          } else {
            assert.equal(l.host, 'h3.com', 'only the deleted host loses leases')
            lost++
          }
        }
      }
      mine.close()
    })())
  }
  await new Promise(resolve => setTimeout(resolve, 100))
  const gone = await q.deleteHost('http://h3.com/')
  await new Promise(resolve => setTimeout(resolve, 100))
  stop = true
  await Promise.all(workers)
  const s = await q.stats()
  assert.equal(gone.host, 'h3.com')
  assert.equal(gone.left, 0)
  assert.equal(gone.removed, gone.ready + gone.delayed + gone.leased + gone.dead)
  assert.equal(s.done, acked, 'done counts exactly the acks that succeeded')
  assert.ok(lost <= gone.leased)
  assert.equal(s.done + s.pending + s.leased + s.dead + gone.removed, 400)
  assert.ok((await q.listHosts()).hosts.every(h => h.host !== 'h3.com'))
  assert.equal((await q.seed('http://h3.com/0')).duplicates, 1, 'its URLs stay seen')
  await assert.rejects(q.deleteHost('not a host/'), { code: 'ERR_CRAWLQ_INVALID_ITEM' })
})

test('in-flight limits of 1 and 2 hold under 16 concurrent workers, and answers free the slots', async () => {
  const q = await open({ hostInFlight: 2 })
  const info = await q.setHostInFlight('one.com', 1)
  assert.deepEqual([info.inFlightLimit, info.inFlight, info.full], [1, 0, false])
  const urls = []
  for (let i = 0; i < 30; i++) urls.push(`http://one.com/${i}`, `http://two.com/${i}`)
  await q.seed(urls)
  const now = { 'one.com': 0, 'two.com': 0 }
  const most = { ...now }
  const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))
  const worker = async (n) => {
    const w = await crawlq.Queue.connect(redis.url, q.name, { hostInFlight: 2 })
    let rounds = 0
    for (;;) {
      const leases = await w.lease({ max: 1 + n % 3, waitMs: 200 })
      if (leases.length === 0) {
        if (await w.isFinished()) break
        continue
      }
      for (const l of leases) { now[l.host]++; most[l.host] = Math.max(most[l.host], now[l.host]) }
      await sleep(2)
      for (const l of leases) now[l.host]--
      rounds++
      if (rounds % 4 === 0) {
        await w.release(leases[0])
        if (leases.length > 1) await w.ack(leases.slice(1))
      } else if (rounds % 4 === 1) {
        await w.nack(leases[0], { delayMs: 0 })
        if (leases.length > 1) await w.ack(leases.slice(1))
      } else {
        await w.ack(leases)
      }
    }
    w.close()
  }
  await Promise.all(Array.from({ length: 16 }, (_, n) => worker(n)))
  assert.deepEqual(most, { 'one.com': 1, 'two.com': 2 }, 'never more than the limit at once, and the limit reached')
  const stats = await q.stats()
  assert.equal(stats.done + stats.dead, 60, 'each acked once, or dead after its third nack')
  assert.equal((await q.hostInfo('one.com')).inFlight, 0)
  await assert.rejects(q.setHostInFlight('one.com', -1), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT' })
  await assert.rejects(q.setHostInFlight('one.com', 1.5), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT' })
  await assert.rejects(q.setHostInFlight('one.com', 1_000_001), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT' })
  await assert.rejects(open({ hostInFlight: -1 }), { code: 'ERR_CRAWLQ_CONFIG' })
  assert.equal((await q.setHostInFlight('one.com', null)).inFlightLimit, null)
})

test('ackWithLinks answers the lease and seeds its links; bad arguments are refused', async () => {
  const q = await open()
  await q.seed(['http://a.com/'])
  const [lease] = await q.lease({ max: 1, waitMs: 0 })
  await assert.rejects(q.ackWithLinks([lease], ['http://a.com/x']), TypeError)
  await assert.rejects(q.ackWithLinks(lease, { url: 'http://a.com/x' }), TypeError)
  await assert.rejects(q.ackWithLinks(lease, ['http://a.com/x'], { priority: 1 << 20 }), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT' })
  const { acked, links } = await q.ackWithLinks(lease, ['http://a.com/x', 'http://a.com/'], { priority: 2 })
  assert.equal(acked, true)
  assert.deepEqual([links.added, links.duplicates], [1, 1])
  assert.equal((await q.lease({ max: 1, waitMs: 0 }))[0].priority, 2)
  q.close()
})

test('ackWithRequests answers the page and seeds the crawl requests found on it', async () => {
  const q = await open()
  await q.seed(['http://a.com/'])
  const [lease] = await q.lease({ max: 1, waitMs: 0 })
  await assert.rejects(q.ackWithRequests(lease, 'http://a.com/form'), TypeError)
  await assert.rejects(q.ackWithRequests([lease], []), TypeError)
  await assert.rejects(q.ackWithRequests(lease, [{ url: 'http://a.com/form' }], { priority: 1 << 20 }), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT' })
  // a request's payload is the request itself: the option would be ignored, so it is refused
  for (const call of [() => q.ackWithRequests(lease, [], { payload: { a: 1 } }), () => q.seedRequests([], { payload: 1 })]) {
    await assert.rejects(call(), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT', message: /unknown seed option "payload"; known: priority, delayMs, force, crawl/ })
  }
  const found = [
    { url: 'http://a.com/form', method: 'POST', body: 'q=1', label: 'search' },
    { url: 'http://a.com/form' },
    { url: 'http://a.com/' }
  ]
  const { acked, links } = await q.ackWithRequests(lease, found, { priority: 2 })
  assert.equal(acked, true)
  assert.deepEqual([links.added, links.duplicates], [2, 1])
  const leased = await q.lease({ max: 5, waitMs: 0 })
  const methods = leased.map((l) => [crawlq.requestOf(l).method, l.priority]).sort()
  assert.deepEqual(methods, [['GET', 2], ['POST', 2]])
  q.close()
})

test('pages answered by many loops at once go together, each with its own answer', async () => {
  const q = await open()
  await q.seed(Array.from({ length: 32 }, (_, i) => `http://p${i}.com/`))
  const pages = await q.lease({ max: 32, waitMs: 0 })
  const before = scriptCalls()
  const answers = await Promise.all(pages.map((page, i) =>
    q.ackWithLinksAndLease(page, [`http://n${i}.com/`, 'http://shared.com/', 'http://not a host/'], { waitMs: 0 })))
  // the pages answered while a call was on its way went in fewer calls than pages
  assert.ok(scriptCalls() - before < 32, `${scriptCalls() - before} calls`)
  assert.ok(answers.every((a) => a.acked))
  assert.deepEqual(answers.map((a) => a.links.invalid.map((i) => i.index)), Array(32).fill([2]))
  // each page's report is its own: one page added the shared link, the others found it
  assert.deepEqual(answers.map((a) => a.links.added).sort(), [...Array(31).fill(1), 2])
  const leased = answers.flatMap((a) => a.leases.map((l) => l.url))
  assert.equal(new Set(leased).size, 32)
  const stats = await q.stats()
  assert.deepEqual([stats.done, stats.leased, stats.ready], [32, 32, 1])
  q.close()
})

test('with answerLingerMs, pages answered one after another go in one call', async () => {
  const q = await open({ answerLingerMs: 400, shards: 1 })
  await q.seed(Array.from({ length: 6 }, (_, i) => `http://p${i}.com/`))
  const pages = await q.lease({ max: 3, waitMs: 0 })
  const before = scriptCalls()
  const started = Date.now()
  const answers = await Promise.all(pages.map(async (page, i) => {
    await new Promise((resolve) => setTimeout(resolve, 50 * i)) // fetches that end one after another
    const answer = await q.ackWithLinksAndLease(page, [`http://n${i}.com/`], { waitMs: 0 })
    return { ...answer, took: Date.now() - started }
  }))
  assert.equal(scriptCalls() - before, 1, 'the first page waited for the two answered after it')
  assert.deepEqual(answers.map((a) => [a.acked, a.links.added, a.leases.length]), Array(3).fill([true, 1, 1]))
  assert.ok(answers.every((a) => a.took >= 390), `answered after ${answers.map((a) => a.took)} ms`)
  q.close()
  await assert.rejects(open({ answerLingerMs: 1001 }), (err) => err.code === 'ERR_CRAWLQ_CONFIG' && /answer_?linger/i.test(err.message))
})

test('ackWithLinksAndLease answers the page, seeds its links and leases the next; bad arguments are refused', async () => {
  const q = await open()
  await q.seed(['http://a.com/'])
  const [lease] = await q.lease({ max: 1, waitMs: 0 })
  await assert.rejects(q.ackWithLinksAndLease([lease], ['http://b.com/']), TypeError)
  await assert.rejects(q.ackWithLinksAndLease(lease, 'http://b.com/', { max: 0 }), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT' })
  await assert.rejects(q.ackWithLinksAndLease(lease, ['http://b.com/'], { waitMs: -1 }), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT' })
  await assert.rejects(q.ackWithLinksAndLease(lease, ['http://b.com/'], { nope: 1 }), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT' })
  const r = await q.ackWithLinksAndLease(lease, ['http://b.com/', 'http://c.com/', 'http://a.com/'], { priority: 3, max: 5, waitMs: 0, ttlMs: 2000 })
  assert.equal(r.acked, true)
  assert.deepEqual([r.links.added, r.links.duplicates], [2, 1])
  assert.deepEqual(r.leases.map((l) => l.url).sort(), ['http://b.com/', 'http://c.com/'])
  assert.ok(r.leases.every((l) => l.priority === 3 && l.expiresAt - l.leasedAt === 2000))
  // the stale answer of an already answered lease: lost, and the lease still runs
  await q.seed(['http://d.com/'])
  const again = await q.ackWithLinksAndLease(lease, [], { waitMs: 0 })
  assert.equal(again.acked, false)
  assert.deepEqual(again.leases.map((l) => l.url), ['http://d.com/'])
  q.close()
})

test('ackWithRequestsAndLease answers the page, seeds its crawl requests and leases the next, in one call', async () => {
  const q = await open()
  await q.seed(['http://a.com/'])
  const [lease] = await q.lease({ max: 1, waitMs: 0 })
  await assert.rejects(q.ackWithRequestsAndLease(lease, 'http://a.com/form'), TypeError)
  await assert.rejects(q.ackWithRequestsAndLease([lease], []), TypeError)
  await assert.rejects(q.ackWithRequestsAndLease(lease, [], { max: 0 }), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT' })
  await assert.rejects(q.ackWithRequestsAndLease(lease, [], { payload: 1 }), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT', message: /known: priority, delayMs, force, crawl, max, waitMs, ttlMs$/ })
  const found = [
    { url: 'http://b.com/form', method: 'POST', body: 'q=1', label: 'search' },
    { url: 'http://b.com/form' },
    { url: 'http://a.com/' },
    { url: 'http://not a host/' }
  ]
  const before = scriptCalls()
  const r = await q.ackWithRequestsAndLease(lease, found, { priority: 3, max: 5, waitMs: 0, ttlMs: 2000 })
  assert.equal(scriptCalls() - before, 1, 'the ack, the requests and the next leases: one call')
  assert.equal(r.acked, true)
  assert.deepEqual([r.links.added, r.links.duplicates], [2, 1])
  assert.deepEqual(r.links.invalid.map((i) => [i.index, i.input]), [[3, 'http://not a host/']])
  const leased = r.leases.map((l) => [crawlq.requestOf(l).method, crawlq.requestOf(l).label ?? null, l.priority]).sort()
  assert.deepEqual(leased, [['GET', null, 3], ['POST', 'search', 3]])
  assert.ok(r.leases.every((l) => l.expiresAt - l.leasedAt === 2000))
  // the stale answer of an already answered lease: lost, its requests seeded, the lease runs
  await q.seed(['http://d.com/'])
  const again = await q.ackWithRequestsAndLease(lease, [{ url: 'http://e.com/' }], { waitMs: 0, max: 5 })
  assert.equal(again.acked, false)
  assert.equal(again.links.added, 1)
  assert.deepEqual(again.leases.map((l) => l.url).sort(), ['http://d.com/', 'http://e.com/'])
  q.close()
})

test('a page\'s relative links and crawl requests resolve against its URL, with the next lease too', async () => {
  const q = await open({ hostDelayMs: 0 })
  await q.seed(['https://a.com/docs/intro.html', 'https://b.com/list/'])
  const pages = Object.fromEntries((await q.lease({ max: 2, waitMs: 0 })).map((l) => [l.host, l]))
  const r = await q.ackWithLinksAndLease(pages['a.com'], ['next.html', '/about#team', '#top', 'javascript:void(0)'], { max: 1, waitMs: 0 })
  assert.deepEqual([r.acked, r.links.added, r.links.duplicates], [true, 2, 1])
  assert.deepEqual(r.links.invalid.map((i) => [i.index, i.code]), [[3, 'unsupported_scheme']])
  assert.deepEqual(r.leases.map((l) => l.url), ['https://a.com/docs/next.html'])
  const found = [{ url: 'search?q=1', method: 'POST', body: 'x' }, { url: 'https://b.com/list/search?q=1' }]
  const answered = await q.ackWithRequestsAndLease(pages['b.com'], found, { max: 5, waitMs: 0 })
  assert.deepEqual([answered.acked, answered.links.added], [true, 2], 'the POST and the GET are two requests')
  const leased = [...answered.leases, ...await q.lease({ max: 10, waitMs: 0 })]
    .map((l) => [l.url, crawlq.requestOf(l).method, crawlq.requestOf(l).url]).sort()
  assert.deepEqual(leased, [
    ['https://a.com/about', 'GET', 'https://a.com/about'],
    ['https://b.com/list/search?q=1', 'GET', 'https://b.com/list/search?q=1'],
    ['https://b.com/list/search?q=1', 'POST', 'https://b.com/list/search?q=1']
  ])
  q.close()
})

test('the seen cache answers repeated links and counts them', async () => {
  const q = await open({ seenCache: 1000 })
  const links = Array.from({ length: 10 }, (_, i) => `http://a.com/${i}`)
  assert.equal((await q.seed(links)).added, 10)
  const report = await q.seed(links)
  assert.deepEqual([report.added, report.duplicates], [0, 10])
  assert.deepEqual(await q.seenCacheStats(), { entries: 10, hits: 10, misses: 10, resent: 0, resets: 0 })
  // the queue counts them as it would without the cache, and as cache hits
  const stats = await q.stats()
  assert.deepEqual([stats.duplicatesTotal, stats.seenCacheHitsTotal], [10, 10])
  await assert.rejects(open({ seenCache: -1 }), { code: 'ERR_CRAWLQ_CONFIG' })
  q.close()
})

test('a turn of a full host comes when an ack frees its slot; bad options are refused', async () => {
  const q = await open()
  await q.setHostInFlight('t.com', 1)
  await q.seed(['http://t.com/1'])
  const [lease] = await q.lease({ max: 1, waitMs: 0 })
  // a redirect of the lease's own fetch runs in its slot; another request waits for one
  assert.equal(await q.waitHostTurn('http://t.com/x', { lease, timeoutMs: 0 }), true)
  assert.equal(await q.waitHostTurn('http://t.com/y', { timeoutMs: 300 }), false)
  let got = null
  const waiting = q.waitHostTurn('http://t.com/z', { timeoutMs: 10000 }).then(v => { got = v })
  await new Promise(resolve => setTimeout(resolve, 300))
  assert.equal(got, null, 'the host is full')
  await q.ack(lease)
  await waiting
  assert.equal(got, true)
  await assert.rejects(q.waitHostTurn('not a url'), { code: 'ERR_CRAWLQ_INVALID_ITEM' })
  await assert.rejects(q.waitHostTurn('http://t.com/x', { lease: 1 }), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT' })
  await assert.rejects(q.waitHostTurn('http://t.com/x', { timeoutMs: -1 }), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT' })
  await assert.rejects(q.waitHostTurn('http://t.com/x', { waitMs: 1 }), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT' })
  q.close()
})

test('a blocked lease wakes when an ack frees the host\'s in-flight slot', async () => {
  const q = await open()
  await q.setHostInFlight('w.com', 1)
  await q.seed(['http://w.com/1', 'http://w.com/2'])
  const [first] = await q.lease({ max: 5, waitMs: 0 })
  assert.equal((await q.hostInfo('w.com')).full, true)
  const waiter = await crawlq.Queue.connect(redis.url, q.name)
  let leasedAt = null
  const waiting = waiter.lease({ waitMs: 20_000 }).then(leases => { leasedAt = Date.now(); return leases })
  await new Promise(resolve => setTimeout(resolve, 300))
  assert.equal(leasedAt, null, 'the host is full')
  const ackedAt = Date.now()
  await q.ack(first)
  assert.deepEqual((await waiting).map(l => l.url), ['http://w.com/2'])
  assert.ok(leasedAt - ackedAt < 5_000, 'woken by the ack, not by its 20 s wait')
  waiter.close()
})

test('nack with the host\'s Retry-After holds the item and the host', async () => {
  const q = await open({ fixedClock: T0, maxAttempts: 10 })
  await q.seed(['http://a.com/1', 'http://a.com/2'])
  const [lease] = await q.lease({ waitMs: 0 })
  assert.equal(await q.nack(lease, { retryAfter: '120' }), 'retried')
  assert.equal((await q.hostInfo('a.com')).heldUntil, T0 + 120_000)
  assert.deepEqual(await q.lease({ max: 5, waitMs: 0 }), [])
  q._setFixedClock(T0 + 120_000)
  const [again] = await q.lease({ max: 1, waitMs: 0 })
  // an HTTP-date (T0 is 2027-01-15T08:00:00Z), rate limited: the adaptive delay grows too
  assert.equal(await q.nack(again, { retryAfter: 'Fri, 15 Jan 2027 08:05:00 GMT', rateLimited: true }), 'retried')
  const info = await q.hostInfo('a.com')
  assert.deepEqual([info.heldUntil, info.adaptiveExtraMs], [T0 + 300_000, 1000])
  q._setFixedClock(T0 + 300_000)
  const [third] = await q.lease({ max: 1, waitMs: 0 })
  await assert.rejects(q.nack(third, { retryAfter: 'soon' }), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT' })
  await assert.rejects(q.nack(third, { retryAfter: 30 }), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT' })
  assert.equal(await q.nack(third, { retryAfterMs: 2500 }), 'retried')
  // the header as a server sent it (framework adapters): one that is neither seconds nor a
  // date is ignored, not refused
  q._setFixedClock(T0 + 302_500)
  const [fourth] = await q.lease({ max: 1, waitMs: 0 })
  await assert.rejects(q.nack(fourth, { retryAfter: '1', retryAfterHeader: '2' }), { code: 'ERR_CRAWLQ_INVALID_ARGUMENT' })
  assert.equal(await q.nack(fourth, { retryAfterHeader: 'soon' }), 'retried')
  // (held by its lease alone: the 1 s adaptive delay of the rate limit above)
  assert.equal((await q.hostInfo('a.com')).heldUntil, T0 + 303_500)
  q._setFixedClock(T0 + 303_500)
  const [fifth] = await q.lease({ max: 1, waitMs: 0 })
  assert.equal(await q.nack(fifth, { retryAfterHeader: '60' }), 'retried')
  assert.equal((await q.hostInfo('a.com')).heldUntil, T0 + 363_500)
})

test('named crawls: one item per crawl, the crawl on every lease, a page\'s links in its crawl', async () => {
  const q = await open({ hostDelayMs: 0 })
  for (const crawl of [undefined, 'red', 'blue']) {
    assert.equal((await q.seed(['http://a.com/x'], { crawl })).added, 1)
    assert.equal((await q.seed(['http://a.com/x'], { crawl })).duplicates, 1)
  }
  const leased = await q.lease({ max: 10, waitMs: 0 })
  assert.deepEqual(leased.map(l => l.crawl).sort(), ['blue', 'red', null].sort())
  const page = leased.find(l => l.crawl === 'red')
  const { acked, links } = await q.ackWithLinks(page, ['http://a.com/next'])
  assert.equal(acked, true)
  assert.equal(links.added, 1)
  const [link] = await q.lease({ max: 1, waitMs: 0 })
  assert.equal(link.crawl, 'red')
  const { donePerSecond, seededPerSecond, ...counts } = await q.crawlStats('red')
  // (its seeds and ack of this minute, or of the minute before weighed by what is left of it)
  assert.ok(seededPerSecond > 0 && seededPerSecond <= 2 * 0.016667, `${seededPerSecond}`)
  assert.ok(donePerSecond > 0 && donePerSecond <= 0.016667, `${donePerSecond}`)
  assert.deepEqual(counts, { pending: 0, ready: 0, delayed: 0, leased: 1, dead: 0, done: 1, seen: 2, hosts: 0, oldestPendingAgeMs: null, seededTotal: 2, cap: null, paused: false, deleting: false, heldHosts: 0, weight: 1, rate: null, hostBudget: null })
  await assert.rejects(q.crawlStats('a:b'), e => e.code === 'ERR_CRAWLQ_INVALID_ARGUMENT')
  await assert.rejects(q.seed(['http://a.com/'], { crawl: 'a:b' }), e => e.code === 'ERR_CRAWLQ_INVALID_ARGUMENT' && /crawl name/.test(e.message))
  q.close()
})

test('crawlStats: a crawl\'s hosts with ready items and its oldest pending age in milliseconds', async () => {
  const q = await open({ fixedClock: T0, hostDelayMs: 0 })
  await q.seed(['http://a.com/1', 'http://a.com/2', 'http://b.com/1'], { crawl: 'red' })
  q._setFixedClock(T0 + 2_500)
  const red = await q.crawlStats('red')
  assert.deepEqual([red.hosts, red.oldestPendingAgeMs], [2, 2_500])
  // its rates over the last minute, a second: T0 starts a minute of the clock
  assert.deepEqual([red.donePerSecond, red.seededPerSecond], [0, 0.05])
  await q.ack(await q.lease({ max: 10, waitMs: 0 }))
  const done = await q.crawlStats('red')
  assert.deepEqual([done.hosts, done.oldestPendingAgeMs, done.done], [0, null, 3])
  assert.deepEqual([done.donePerSecond, done.seededPerSecond], [0.05, 0.05])
  // 30 s into the next minute, half of that minute is still within the last 60 s
  q._setFixedClock(T0 + 90_000)
  const later = await q.crawlStats('red')
  assert.deepEqual([later.donePerSecond, later.seededPerSecond], [0.025, 0.025])
  await q.close()
})

test('a crawl\'s host budget: new URLs past it refused per item and not marked seen, other crawls not counted', async () => {
  const q = await open({ hostDelayMs: 0 })
  assert.equal((await q.setCrawlHostBudget('trial', 2)).hostBudget, 2)
  const urls = ['http://a.com/0', 'http://a.com/1', 'http://a.com/2', 'http://b.com/0']
  let report = await q.seed(urls, { crawl: 'trial' })
  assert.equal(report.added, 3)
  assert.deepEqual(report.invalid.map(i => [i.index, i.input, i.code]), [[2, 'http://a.com/2', 'budget_exhausted']])
  assert.equal((await q.seed(urls, { crawl: 'full' })).added, 4)
  await q.setCrawlHostBudget('trial', null)
  report = await q.seed(urls, { crawl: 'trial' })
  assert.deepEqual([report.added, report.duplicates, report.invalid.length], [1, 3, 0])
  assert.equal((await q.crawlStats('trial')).hostBudget, null)
  await assert.rejects(q.setCrawlHostBudget('trial', -1), e => e.code === 'ERR_CRAWLQ_INVALID_ARGUMENT' && /urls/.test(e.message))
  await assert.rejects(q.setCrawlHostBudget('a b', 1), e => e.code === 'ERR_CRAWLQ_INVALID_ARGUMENT' && /crawl name/.test(e.message))
  q.close()
})

test('crawl caps and pauses: a cap holds under 16 workers, a paused crawl waits while others are leased', async () => {
  const q = await open({ hostDelayMs: 0 })
  const spread = (prefix, hosts, perHost) => Array.from({ length: perHost * hosts }, (_, i) => `http://h${i % hosts}.com/${prefix}${Math.floor(i / hosts)}`)
  await q.seed(spread('big', 30, 8), { crawl: 'big' })
  await q.seed(spread('small', 30, 2), { crawl: 'small' })
  const stats = await q.setCrawlCap('big', 3)
  assert.deepEqual([stats.cap, stats.paused], [3, false])
  let inHand = 0
  let most = 0
  let done = 0
  const worker = async () => {
    for (let idle = 0; idle < 10;) {
      const leases = await q.lease({ max: 1, waitMs: 50 })
      if (leases.length === 0) { idle++; continue }
      idle = 0
      const big = leases[0].crawl === 'big'
      if (big) { inHand++; most = Math.max(most, inHand) }
      await new Promise(resolve => setTimeout(resolve, 3))
      if (big) inHand--
      await q.ack(leases)
      done++
    }
  }
  await Promise.all(Array.from({ length: 16 }, worker))
  assert.equal(done, 300)
  assert.ok(most >= 2 && most <= 3, `${most} leases of the capped crawl in hand at once`)
  const big = await q.crawlStats('big')
  assert.deepEqual([big.done, big.leased, big.heldHosts, big.cap], [240, 0, 0, 3])

  await q.seed(spread('p', 4, 2), { crawl: 'paused' })
  await q.seed(spread('o', 4, 1), { crawl: 'other' })
  assert.equal(await q.pauseCrawl('paused'), undefined)
  const leased = await q.lease({ max: 20, waitMs: 0 })
  assert.deepEqual([...new Set(leased.map(l => l.crawl))], ['other'])
  const paused = await q.crawlStats('paused')
  assert.deepEqual([paused.paused, paused.ready, paused.heldHosts, paused.hosts], [true, 8, 4, 4])
  assert.deepEqual(await q.crawls(), ['big', 'other', 'paused', 'small'])
  await q.resumeCrawl('paused')
  assert.deepEqual((await q.lease({ max: 20, waitMs: 0 })).map(l => l.crawl), Array(8).fill('paused'))
  await assert.rejects(q.setCrawlCap('big', 0), e => e.code === 'ERR_CRAWLQ_INVALID_ARGUMENT')
  await assert.rejects(q.pauseCrawl('a b'), e => e.code === 'ERR_CRAWLQ_INVALID_ARGUMENT')
  assert.equal((await q.setCrawlCap('big', null)).cap, null)
  assert.equal((await q.setCrawlWeight('big', 2)).weight, 2)
  assert.equal((await q.setCrawlRate('big', 2.5)).rate, 2.5)
  await assert.rejects(q.setCrawlRate('big', -1), e => e.code === 'ERR_CRAWLQ_INVALID_ARGUMENT')
  assert.equal((await q.setCrawlRate('big', null)).rate, null)
  await assert.rejects(q.setCrawlWeight('big', 1001), e => e.code === 'ERR_CRAWLQ_INVALID_ARGUMENT')
  q.close()
})

test('deleting a crawl mid-drain with 8 workers running leaves the other crawl whole', async () => {
  const q = await open({ hostDelayMs: 0 })
  const spread = (prefix, hosts, perHost) => Array.from({ length: perHost * hosts }, (_, i) => `http://h${i % hosts}.com/${prefix}${Math.floor(i / hosts)}`)
  await q.seed(spread('doomed', 10, 20), { crawl: 'doomed' })
  await q.seed(spread('kept', 10, 10), { crawl: 'kept' })
  const done = { doomed: 0, kept: 0 }
  let lost = 0
  const worker = async () => {
    for (let idle = 0; idle < 10;) {
      const leases = await q.lease({ max: 2, waitMs: 50 })
      if (leases.length === 0) { idle++; continue }
      idle = 0
      await new Promise(resolve => setTimeout(resolve, 2))
      for (const lease of leases) {
        let acked
        try { acked = await q.ack(lease) } catch (e) { if (e.code !== 'ERR_CRAWLQ_LEASE_LOST') throw e; acked = false }
        if (acked === true || (Array.isArray(acked) && acked[0])) done[lease.crawl]++
        else { assert.equal(lease.crawl, 'doomed'); lost++ }
      }
    }
  }
  const deleter = async () => {
    while (done.doomed + done.kept < 30) await new Promise(resolve => setTimeout(resolve, 2))
    return q.deleteCrawl('doomed')
  }
  const [gone] = await Promise.all([deleter(), ...Array.from({ length: 8 }, worker)])
  assert.equal(gone.crawl, 'doomed')
  assert.equal(done.doomed + gone.ready + gone.leased, 200)
  assert.equal(gone.leased, lost)
  assert.equal(done.kept, 100)
  assert.equal((await q.crawlStats('kept')).done, 100)
  assert.equal((await q.crawlStats('doomed')).seededTotal, 0)
  assert.deepEqual(await q.crawls(), ['kept'])
  assert.equal((await q.stats()).pending, 0)
  q.close()
})

test('a seed calls onProgress after each round trip, waits for it, and stops where it throws', async () => {
  const q = await open({ hostDelayMs: 0, seedBatch: 500 })
  const spread = (prefix, n) => Array.from({ length: n }, (_, i) => `http://p${i % 40}.example/${prefix}${i}`)
  const reports = []
  const report = await q.seed(new Set([...spread('a', 2000), 'ftp://refused.example/']), {
    priority: 1,
    onProgress: async soFar => {
      reports.push(soFar)
      await new Promise(resolve => setTimeout(resolve, 1)) // awaited before the next round trip
    }
  })
  assert.deepEqual(reports.map(r => r.done), [500, 1000, 1500, 2000, 2001])
  assert.deepEqual(reports.at(-1), { done: 2001, total: 2001, added: 2000, duplicates: 0, invalid: 1 })
  assert.deepEqual([report.added, report.invalid.length], [2000, 1])

  const stop = new RangeError('enough')
  await assert.rejects(q.seed(spread('b', 3000), {
    onProgress: soFar => { if (soFar.done >= 1000) throw stop }
  }), e => e === stop)
  await new Promise(resolve => setTimeout(resolve, 200))
  const seen = (await q.stats()).seen - 2000
  assert.ok(seen >= 1000 && seen <= 1500 && seen % 250 === 0, `the round trips reported, and at most the one sent after: ${seen}`)
  const again = await q.seed(spread('b', 3000))
  assert.deepEqual([again.added, again.duplicates], [3000 - seen, seen])

  const requestReports = []
  await q.seedRequests(Array.from({ length: 600 }, (_, i) => ({ url: `http://r.example/${i}`, method: 'POST', body: 'x' })),
    { onProgress: p => requestReports.push(p.done) })
  assert.deepEqual(requestReports, [500, 600])
  await assert.rejects(q.seed(['http://x.example/'], { onProgress: 5 }), e => e instanceof TypeError && e.code === 'ERR_INVALID_ARG_TYPE')
  // an iterable that throws rejects before anything is sent or armed; the next call is plain
  function * broken () { yield 'http://y.example/'; throw new Error('iterator broke') }
  await assert.rejects(q.seed(broken(), { onProgress: () => {} }), /iterator broke/)
  assert.equal((await q.stats()).seen, 5600, 'nothing of the refused calls was sent')
  q.close()
})

test('long deletions call onProgress after each step, wait for it, and stop where it throws', async () => {
  const q = await open({ hostDelayMs: 0 })
  const spread = (prefix, n) => Array.from({ length: n }, (_, i) => `http://h${i % 40}.com/${prefix}${i}`)
  await q.seed(spread('a', 1200), { crawl: 'big' })
  const reports = []
  const gone = await q.deleteCrawl('big', {
    onProgress: async soFar => {
      reports.push(soFar.removed)
      await new Promise(resolve => setTimeout(resolve, 1)) // awaited before the next step
    }
  })
  assert.equal(gone.removed, 1200)
  assert.ok(reports.length >= 3, `one report per bounded step: ${reports}`)
  assert.deepEqual(reports, [...reports].sort((a, b) => a - b))
  assert.equal(reports.at(-1), 1200)

  // a callback that throws stops the deletion right after its step; calling again finishes it
  await q.seed(spread('b', 1200), { crawl: 'big' })
  const stop = new RangeError('enough')
  let stoppedAt = 0
  await assert.rejects(q.deleteCrawl('big', {
    onProgress: soFar => {
      if (soFar.removed > 0) { stoppedAt = soFar.removed; throw stop }
    }
  }), e => e === stop)
  assert.ok(stoppedAt > 0 && stoppedAt < 1200, `stopped at ${stoppedAt}`)
  const stopped = await q.crawlStats('big')
  const left = stopped.ready
  assert.equal(left, 1200 - stoppedAt)
  assert.deepEqual([stopped.deleting, stopped.paused], [true, true], 'shown as being deleted')
  assert.equal((await q.deleteCrawl('big', {})).removed, left)
  assert.equal((await q.crawlStats('big')).deleting, false)

  await q.seed(Array.from({ length: 1200 }, (_, i) => `http://one.example/p${i}`))
  const hostReports = []
  const host = await q.deleteHost('one.example', { forgetSeen: true, onProgress: d => hostReports.push(d) })
  assert.equal(host.removed, 1200)
  assert.ok(hostReports.length >= 3)
  assert.deepEqual(hostReports.at(-1), host)

  await assert.rejects(q.deleteCrawl('big', { onProgress: 5 }), e => e instanceof TypeError && e.code === 'ERR_INVALID_ARG_TYPE')
  await assert.rejects(q.deleteCrawl('big', { onprogress: true }), e => e.code === 'ERR_CRAWLQ_INVALID_ARGUMENT' && /known: onProgress/.test(e.message))
  await q.seed(spread('c', 300))
  const keys = []
  const deleted = await q.removeQueue({ onProgress: n => keys.push(n) })
  assert.ok(keys.length > 0 && keys.at(-1) === deleted, `${keys} then ${deleted}`)
  assert.equal((await q.stats()).pending, 0)
  q.close()
})

test('a worker leases from its chosen crawls only (leaseCrawls)', async () => {
  const name = uniqueName('chosen')
  const q = await crawlq.Queue.connect(redis.url, name, { hostDelayMs: 0 })
  const spread = (prefix, hosts, perHost) => Array.from({ length: perHost * hosts }, (_, i) => `http://h${i % hosts}.com/${prefix}${Math.floor(i / hosts)}`)
  await q.seed(spread('big', 50, 2), { crawl: 'big' })
  await q.seed(['http://h49.com/small1', 'http://h48.com/small2'], { crawl: 'small' })
  const worker = await crawlq.Queue.connect(redis.url, name, { hostDelayMs: 0, leaseCrawls: 'small' })
  const leased = await worker.lease({ max: 10, waitMs: 500 })
  assert.deepEqual(leased.map(l => l.crawl), ['small', 'small'])
  assert.equal((await q.crawlStats('big')).leased, 0)
  await assert.rejects(crawlq.Queue.connect(redis.url, name, { leaseCrawls: 'a:b' }), e => e.code === 'ERR_CRAWLQ_CONFIG')
  // a list of names as well as one string of them; a name with a space in a list is refused
  const listed = await crawlq.Queue.connect(redis.url, name, { hostDelayMs: 0, leaseCrawls: ['small', 'none-yet'] })
  await worker.release(leased)
  assert.deepEqual((await listed.lease({ max: 10, waitMs: 500 })).map(l => l.crawl), ['small', 'small'])
  await assert.rejects(crawlq.Queue.connect(redis.url, name, { leaseCrawls: ['sm all'] }),
    e => e.code === 'ERR_CRAWLQ_CONFIG' && e.message.includes('got "sm all"'))
  listed.close()
  worker.close()
  q.close()
})
