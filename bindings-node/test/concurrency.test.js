'use strict'
// Many concurrent calls from one process: hundreds of leases in flight never share a live item.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { crawlq, startRedis, uniqueName } = require('./harness.js')

let redis
before(async () => { redis = await startRedis() })
after(async () => { await redis.stop() })

test('hundreds of concurrent leases never hold the same live item', async () => {
  const q = await crawlq.Queue.connect(redis.url, uniqueName('c'))
  const total = 3000
  await q.seed(Array.from({ length: total }, (_, i) => `https://h${i % 40}.example/${i}`))
  const live = new Set()
  const seen = new Map()
  const worker = async () => {
    for (;;) {
      const leases = await q.lease({ max: 3, waitMs: 200 })
      if (leases.length === 0) return
      for (const lease of leases) {
        assert.ok(!live.has(lease.id), `item ${lease.id} leased twice while live`)
        live.add(lease.id)
        seen.set(lease.id, (seen.get(lease.id) ?? 0) + 1)
      }
      await new Promise(resolve => setImmediate(resolve))
      for (const lease of leases) live.delete(lease.id)
      assert.deepEqual(await q.ack(leases), leases.map(() => true))
    }
  }
  await Promise.all(Array.from({ length: 300 }, worker))
  assert.equal(seen.size, total)
  assert.ok([...seen.values()].every(n => n === 1))
  const stats = await q.stats()
  assert.deepEqual([stats.done, stats.leased, stats.pending], [total, 0, 0])
})

test('many queues and calls interleave on one connection', async () => {
  const queues = await Promise.all(Array.from({ length: 20 }, () => crawlq.Queue.connect(redis.url, uniqueName('m'))))
  await Promise.all(queues.map((q, i) => q.seed(Array.from({ length: 50 }, (_, j) => `http://q${i}.com/${j}`))))
  const counts = await Promise.all(queues.map(async q => (await q.lease({ max: 100, waitMs: 0 })).length))
  assert.deepEqual(counts, queues.map(() => 50))
})
