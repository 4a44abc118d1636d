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
