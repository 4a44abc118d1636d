'use strict'
// One queue of 8 shards over a Redis Cluster (CRAWLQ_CLUSTER_URL, started by tools/test.sh):
// seeded, drained by a work() loop, dead letters across shards, per-shard stats. The
// WebAssembly build refuses a cluster at connect, typed.
const test = require('node:test')
const assert = require('node:assert/strict')
const { crawlq, uniqueName } = require('./harness.js')

const url = process.env.CRAWLQ_CLUSTER_URL
const wasm = /wasm/.test(process.env.CRAWLQ_JS_MODULE ?? '')

test('one queue of 8 shards over a Redis Cluster', { skip: !url && 'CRAWLQ_CLUSTER_URL is not set (tools/test.sh sets it)' }, async () => {
  if (wasm) {
    await assert.rejects(crawlq.Queue.connect(url, uniqueName('cluster')), err => err.code === 'ERR_CRAWLQ_CONFIG' && /Cluster/.test(err.message))
    return
  }
  const q = await crawlq.Queue.connect(url, uniqueName('cluster'), { shards: 8 })
  const urls = Array.from({ length: 500 }, (_, i) => `http://h${i % 50}.cluster.example/${i}`)
  assert.equal((await q.seed(urls)).added, 500)
  let done = 0
  for await (const lease of q.work({ max: 20, waitMs: 300, stopWhenEmpty: true })) {
    assert.match(lease.id, /^\d+@\d$/)
    if (lease.url.endsWith('/7')) await q.nack(lease, { retry: false, reason: 'gone' })
    else if (await q.ack(lease)) done++
  }
  const stats = await q.stats()
  assert.deepEqual([stats.done, stats.dead, stats.pending, stats.leased], [499, 1, 0, 0])
  assert.equal(stats.shards.length, 8)
  assert.equal(stats.shards.reduce((n, s) => n + s.done, 0), 499)
  assert.equal(done, 499)
  const [dead] = await q.dead()
  assert.equal(dead.url, 'http://h7.cluster.example/7')
  assert.equal(await q.requeueDead([dead.id]), 1)
  assert.equal(crawlq.shardOf(dead.url, 8), Number(dead.id.split('@')[1]))
  await q.close()
})
