'use strict'
// The hostile-input table shared by every binding (tests/vectors/hostile.json): each case's
// answer, and a refused call leaves the data unchanged (DEBUG DIGEST). Runs against the
// native addon and, unchanged, against the WebAssembly build.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { crawlq, startRedis, uniqueName } = require('./harness.js')

const table = require(path.resolve(__dirname, '../../tests/vectors/hostile.json'))

let redis
before(async () => { redis = await startRedis() })
after(async () => { await redis.stop() })

/** A tagged value of the table as JavaScript's own. */
function value (v) {
  if (Array.isArray(v)) return v.map(value)
  if (v && typeof v === 'object') {
    if ('$nan' in v) return NaN
    if ('$inf' in v) return v.$inf * Infinity
    if ('$int' in v) return BigInt(v.$int)
    if ('$object' in v) return () => 1
    if ('$bad_text' in v) return v.$bad_text + '\ud800'
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, value(x)]))
  }
  return v
}

/** Seconds of the table as milliseconds (NaN and infinities stay what they are). */
const ms = s => (typeof s === 'number' ? s * 1000 : s)

/** A seed item or batch options object in JavaScript's spelling. */
function seedFields (o) {
  if (typeof o !== 'object' || o === null || Array.isArray(o)) return o
  const out = {}
  for (const [k, v] of Object.entries(o)) {
    if (k === 'delay') out.delayMs = ms(v)
    else out[k] = v
  }
  return out
}

const camel = s => s.replace(/_([a-z])/g, (_, c) => c.toUpperCase())
const DURATIONS = new Set(['lease_ttl', 'host_delay', 'command_timeout', 'connect_timeout'])

async function run (q, lease, raw) {
  const c = Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, value(v)]))
  switch (c.call) {
    case 'seed': {
      const items = Array.isArray(c.items) ? c.items.map(seedFields) : c.items
      return q.seed(items, c.options ? seedFields(c.options) : undefined)
    }
    case 'ack_with_links': return q.ackWithLinks(lease, c.items.map(seedFields))
    case 'lease': {
      const opts = { max: c.max, waitMs: ms(c.wait) }
      if ('ttl' in c) opts.ttlMs = ms(c.ttl)
      return q.lease(opts)
    }
    case 'nack': {
      const opts = {}
      if ('reason' in c) opts.reason = c.reason
      if ('delay' in c) opts.delayMs = ms(c.delay)
      return q.nack(lease, opts)
    }
    case 'extend': return q.extend(lease, ms(c.ttl))
    case 'set_host_delay': return q.setHostDelay(c.host, ms(c.seconds))
    case 'pause_host': return q.pauseHost(c.host, ms(c.seconds))
    case 'resume_host': return q.resumeHost(c.host)
    case 'host_info': return q.hostInfo(c.host)
    case 'delete_host': return q.deleteHost(c.host)
    case 'set_host_budget': return q.setHostBudget(c.host, c.urls)
    case 'list_hosts': {
      const opts = { limit: c.limit }
      if ('cursor' in c) opts.cursor = c.cursor
      return q.listHosts(opts)
    }
    case 'dead': return q.dead({ limit: c.limit, offset: c.offset })
    case 'reclaim': return q.reclaim({ limit: c.limit })
    case 'open': {
      const opts = {}
      for (const [k, v] of Object.entries(c.options)) {
        if (DURATIONS.has(k)) opts[camel(k) + 'Ms'] = ms(v)
        else opts[camel(k)] = v
      }
      return crawlq.Queue.connect(redis.url, c.queue, opts)
    }
    default: throw new Error(`no call ${c.call}`)
  }
}

for (const c of table.cases) {
  test(`hostile input: ${c.name}`, async () => {
    const q = await crawlq.Queue.connect(redis.url, uniqueName('hostile'))
    await q.seed(['http://held.example/1', 'http://queued.example/1'])
    const [lease] = await q.lease({ max: 1, waitMs: 0 })
    assert.equal(lease.host, 'held.example')
    const before = redis.cli('DEBUG', 'DIGEST')
    const expect = c.expect_js ?? c.expect
    if (expect.error || expect.type_error) {
      let thrown
      try {
        await run(q, lease, c)
      } catch (err) {
        thrown = err
      }
      assert.ok(thrown, 'the call is refused')
      if (expect.error) {
        assert.equal(thrown.code, `ERR_CRAWLQ_${expect.error}`, thrown.message)
      } else {
        assert.ok(thrown instanceof TypeError, `${thrown.code}: ${thrown.message}`)
        assert.equal(thrown.code, 'ERR_INVALID_ARG_TYPE', thrown.message)
      }
      assert.equal(redis.cli('DEBUG', 'DIGEST'), before, 'a refused call changed nothing')
      return
    }
    let answer = await run(q, lease, c)
    if (c.call === 'ack_with_links') {
      assert.equal(answer.acked, expect.acked)
      answer = answer.links
    }
    if (c.call === 'seed' || c.call === 'ack_with_links') {
      assert.equal(answer.added, expect.added)
      assert.deepEqual(answer.invalid.map(i => [i.index, i.code]), expect.invalid)
    }
    if (expect.host) assert.equal(answer.host, expect.host)
    if (expect.outcome) assert.equal(answer, expect.outcome)
    if (c.call === 'open') await answer.close?.()
    await q.close?.()
  })
}
