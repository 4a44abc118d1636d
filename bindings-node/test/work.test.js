'use strict'
// for await (const lease of q.work()): until empty, on break, on AbortSignal.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { crawlq, startRedis, uniqueName } = require('./harness.js')

let redis
before(async () => { redis = await startRedis() })
after(async () => { await redis.stop() })

const open = () => crawlq.Queue.connect(redis.url, uniqueName('w'))
const seed = (q, n, host = 'a.com') => q.seed(Array.from({ length: n }, (_, i) => `http://${host}/${i}`))

test('work() drains the queue until empty', async () => {
  const q = await open()
  await q.seed(Array.from({ length: 25 }, (_, i) => `http://h${i % 3}.com/${i}`))
  const urls = []
  for await (const lease of q.work({ max: 4, waitMs: 100, stopWhenEmpty: true })) {
    urls.push(lease.url)
    await q.ack(lease)
  }
  assert.equal(new Set(urls).size, 25)
  assert.equal((await q.stats()).done, 25)
})

test('break releases the prefetched leases and the unanswered current one', async () => {
  const q = await open()
  await seed(q, 6)
  let n = 0
  for await (const lease of q.work({ max: 6, waitMs: 100 })) {
    if (n++ === 0) {
      await q.ack(lease)
      continue
    }
    break
  }
  const stats = await q.stats()
  assert.deepEqual([stats.done, stats.leased, stats.ready, stats.releasedTotal], [1, 0, 5, 5])
})

test('an AbortSignal stops a waiting iteration promptly and releases what it holds', async () => {
  const q = await open()
  await seed(q, 3)
  const controller = new AbortController()
  const got = []
  const started = Date.now()
  setTimeout(() => controller.abort(), 300)
  for await (const lease of q.work({ max: 3, waitMs: 60_000, signal: controller.signal })) {
    got.push(lease.url)
    if (got.length < 3) await q.ack(lease) // the third stays unanswered: the abort comes while it is current
  }
  assert.ok(Date.now() - started < 5000, 'stopped by the abort, not the 60 s wait')
  assert.equal(got.length, 3)
  const stats = await q.stats()
  assert.deepEqual([stats.leased, stats.done, stats.ready], [0, 2, 1], 'the unanswered current lease was released')
})

test('closing a loop ends the wait of its pending fetch at once: work seeded after it is not leased', async () => {
  const q = await open()
  const iterator = q.work({ max: 5, waitMs: 60_000 })
  const pending = iterator.next()
  await new Promise(resolve => setTimeout(resolve, 100))
  await iterator.close()
  await seed(q, 1) // a fetch still waiting out its slice would lease this and give it back
  assert.equal((await pending).done, true)
  const stats = await q.stats()
  assert.deepEqual([stats.ready, stats.leased, stats.releasedTotal], [1, 0, 0])
})

test('queue.close() ends every wait under way and work() loops; later leases get nothing', async () => {
  const name = uniqueName('w-close')
  const q = await crawlq.Queue.connect(redis.url, name)
  await seed(q, 2)
  const [first, second] = await q.lease({ max: 2, waitMs: 0 })
  const worked = []
  const waiting = Promise.all([
    q.lease({ max: 1, waitMs: 30000 }),
    q.ackAndLease(first, { max: 1, waitMs: 30000 }),
    q.ackWithLinksAndLease(second, ['http://b.com/later'], { max: 1, waitMs: 30000, delayMs: 60000 }),
    (async () => { for await (const lease of q.work({ max: 2, waitMs: 30000 })) worked.push(lease.url) })()
  ])
  await new Promise(resolve => setTimeout(resolve, 300))
  const started = Date.now()
  await q.close()
  const [leased, acked, answered] = await waiting
  assert.ok(Date.now() - started < 10000, 'ended by close(), not the 30 s waits')
  assert.deepEqual(leased, [])
  assert.deepEqual([acked.acked, acked.leases], [true, []])
  assert.deepEqual([answered.acked, answered.links.added, answered.leases], [true, 1, []])
  assert.deepEqual(worked, [])
  // (another queue object looks: the WebAssembly build's close() also closes its client)
  const other = await crawlq.Queue.connect(redis.url, name)
  await other.seed(['http://c.com/late'])
  assert.deepEqual(await q.lease({ max: 1, waitMs: 30000 }), [], 'a closed queue leases nothing, at once')
  const stats = await other.stats()
  assert.deepEqual([stats.ready, stats.delayed, stats.leased, stats.done], [1, 1, 0, 2])
  await other.close()
})

test('an already aborted signal yields nothing', async () => {
  const q = await open()
  await seed(q, 2)
  const signal = AbortSignal.abort()
  const got = []
  for await (const lease of q.work({ signal })) got.push(lease)
  assert.deepEqual(got, [])
  assert.equal((await q.stats()).leased, 0)
})

test('close() stops and releases; bad options are refused', async () => {
  const q = await open()
  await seed(q, 4)
  const it = q.work({ max: 4, waitMs: 100 })
  const first = await it.next()
  assert.equal(first.done, false)
  assert.equal(first.value.url, 'http://a.com/0')
  await it.close()
  assert.deepEqual(await it.next(), { done: true })
  assert.equal((await q.stats()).leased, 0)
  assert.throws(() => q.work({ signal: 'nope' }), err => err instanceof TypeError)
  assert.throws(() => q.work({ max: 0 }), err => err.code === 'ERR_CRAWLQ_INVALID_ARGUMENT')
  assert.throws(() => q.work({ maxItems: 3 }), err => err.code === 'ERR_CRAWLQ_INVALID_ARGUMENT')
})

test('a leasing call given an AbortSignal ends its wait when it aborts and rejects with its reason', async () => {
  const q = await open()
  const controller = new AbortController()
  const started = Date.now()
  setTimeout(() => controller.abort(), 100)
  await assert.rejects(q.lease({ waitMs: 60_000, signal: controller.signal }), err => err.name === 'AbortError')
  assert.ok(Date.now() - started < 5000, 'stopped by the abort, not the 60 s wait')
  await seed(q, 1) // a wait still running would lease this
  await new Promise(resolve => setTimeout(resolve, 300))
  let stats = await q.stats()
  assert.deepEqual([stats.ready, stats.leased, stats.releasedTotal], [1, 0, 0])

  // the answer stands: the page is done, nothing more is leased
  const [page] = await q.lease({ waitMs: 0 })
  const reason = new Error('shutting down')
  const answering = new AbortController()
  setTimeout(() => answering.abort(reason), 100)
  const pending = q.ackWithLinksAndLease(page, ['http://a.com/0'], { waitMs: 60_000, signal: answering.signal })
  await assert.rejects(pending, err => err === reason)
  stats = await q.stats()
  assert.deepEqual([stats.done, stats.ready, stats.leased], [1, 0, 0], 'acked; its link a duplicate')

  // an unaborted signal changes nothing; ackAndLease takes one too
  await seed(q, 2, 'b.com')
  const [first] = await q.lease({ waitMs: 0, signal: new AbortController().signal })
  const { acked, leases } = await q.ackAndLease(first, { waitMs: 0, signal: new AbortController().signal })
  assert.equal(acked, true)
  assert.equal(leases.length, 1)
  await q.ack(leases)
})

test('an aborted signal leases nothing; leases a script under way took go back', async () => {
  const q = await open()
  await seed(q, 1)
  await assert.rejects(q.lease({ waitMs: 0, signal: AbortSignal.abort() }), err => err.name === 'AbortError')
  assert.equal((await q.stats()).ready, 1, 'no call made')
  // aborted at once, on the way, while its script runs or after: a call that rejects leaves
  // nothing leased (a lease its script took is released first)
  let rejected = 0
  for (let i = 0; i < 16; i++) {
    const controller = new AbortController()
    const pending = q.lease({ waitMs: 5000, signal: controller.signal })
    if (i % 4 === 0) controller.abort()
    else setTimeout(() => controller.abort(), i % 4 - 1)
    try {
      await q.release(await pending) // it had its answer before the abort
    } catch (err) {
      assert.equal(err.name, 'AbortError')
      rejected++
    }
    const stats = await q.stats()
    assert.deepEqual([stats.ready, stats.leased], [1, 0])
  }
  assert.ok(rejected >= 4, 'the calls aborted at once rejected')
  await assert.rejects(q.lease({ signal: 'nope' }), err => err instanceof TypeError && err.code === 'ERR_INVALID_ARG_TYPE')
  await assert.rejects(q.ackAndLease([], { signal: null }), err => err instanceof TypeError)
  // the refused call took the armed signal with it: the next call is not aborted by it
  assert.equal((await q.lease({ waitMs: 0 })).length, 1)
})

test('extendEveryMs keeps held leases alive from a timer; releaseHeld gives them back', async () => {
  const q = await crawlq.Queue.connect(redis.url, uniqueName('held'), { leaseTtlMs: 600, extendEveryMs: 150 })
  assert.equal(q.extendEveryMs, 150)
  await q.seed(['http://a.com/1', 'http://b.com/2', 'http://c.com/3'])
  const leases = await q.lease({ max: 3, waitMs: 0 })
  assert.equal(await q.ack(leases[2]), true)
  await new Promise(resolve => setTimeout(resolve, 1800)) // three lease times
  assert.equal((await q.reclaim()).requeued, 0)
  assert.equal((await q.stats()).leased, 2)
  assert.equal(await q.ack(leases[0]), true)
  assert.equal(await q.releaseHeld(), 1, 'the one still held is released')
  assert.equal(await q.releaseHeld(), 0)
  const stats = await q.stats()
  assert.deepEqual([stats.leased, stats.ready, stats.reclaimedTotal], [0, 1, 0])
  await q.close()
})

test('extendEveryMs must be shorter than every lease time', async () => {
  await assert.rejects(crawlq.Queue.connect(redis.url, uniqueName('held'), { leaseTtlMs: 1000, extendEveryMs: 1000 }),
    err => err.code === 'ERR_CRAWLQ_CONFIG' && /extend_every|extendEvery/.test(err.message))
  const q = await crawlq.Queue.connect(redis.url, uniqueName('held'), { extendEveryMs: 1000 })
  await assert.rejects(q.lease({ waitMs: 0, ttlMs: 500 }), err => err.code === 'ERR_CRAWLQ_INVALID_ARGUMENT')
  assert.equal(await q.extendHeld(), 0)
  await q.close()
})

test('on SIGTERM the documented handler releases what the process holds', async () => {
  const { spawn } = require('node:child_process')
  const path = require('node:path')
  const name = uniqueName('held')
  const q = await crawlq.Queue.connect(redis.url, name)
  await q.seed(['http://a.com/1', 'http://b.com/2', 'http://c.com/3'])
  const child = spawn(process.execPath, ['-e', `
    const { crawlq } = require(${JSON.stringify(path.join(__dirname, 'harness.js'))})
    crawlq.Queue.connect(${JSON.stringify(redis.url)}, ${JSON.stringify(name)}).then(async q => {
      process.once('SIGTERM', async () => { console.log('released', await q.releaseHeld()); process.exit(0) })
      await q.lease({ max: 2, waitMs: 0 })
      console.log('holding'); setInterval(() => {}, 1000)
    })`], { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.stdout.on('data', d => { out += d })
  while (!out.includes('holding')) await new Promise(resolve => setTimeout(resolve, 20))
  const exited = new Promise(resolve => child.once('exit', code => resolve(code)))
  child.kill('SIGTERM')
  assert.equal(await exited, 0)
  assert.match(out, /released 2/)
  const stats = await q.stats()
  assert.deepEqual([stats.leased, stats.ready, stats.releasedTotal], [0, 3, 2])
  await q.close()
})
