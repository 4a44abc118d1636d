'use strict'
// The shared vectors of tests/vectors/, checked through the JavaScript API (the native addon,
// or another implementation chosen by CRAWLQ_JS_MODULE, such as the WebAssembly build).
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { crawlq, startRedis, uniqueName } = require('./harness.js')

const VECTORS = path.resolve(__dirname, '..', '..', 'tests', 'vectors')
const load = name => JSON.parse(fs.readFileSync(path.join(VECTORS, name), 'utf8'))

let redis
before(async () => { redis = await startRedis() })
after(async () => { await redis.stop() })

const camel = name => name.replace(/_([a-z])/g, (_, c) => c.toUpperCase())

/** Vector names (snake_case, `_ms`) in JavaScript style (camelCase, `Ms`); payloads left alone. */
function toJs (value) {
  if (Array.isArray(value)) return value.map(toJs)
  if (value === null || typeof value !== 'object') return value
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [
    k.endsWith('_ms') ? camel(k.slice(0, -3)) + 'Ms' : camel(k),
    k === 'payload' ? v : toJs(v)
  ]))
}

/** Results back in vector names: expiresAt -> expires_at, oldestPendingAgeMs -> oldest_pending_age. */
function toVector (value) {
  if (Array.isArray(value)) return value.map(toVector)
  if (value === null || typeof value !== 'object') return value
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [
    k.replace(/Ms$/, '').replace(/[A-Z]/g, c => '_' + c.toLowerCase()),
    k === 'payload' ? v : toVector(v)
  ]))
}

function matches (expected, actual) {
  if (Array.isArray(expected)) return Array.isArray(actual) && expected.length === actual.length && expected.every((e, i) => matches(e, actual[i]))
  if (expected !== null && typeof expected === 'object') return actual !== null && typeof actual === 'object' && Object.entries(expected).every(([k, v]) => k in actual && matches(v, actual[k]))
  return expected === actual
}

test('normalization and fingerprints', () => {
  const { cases } = load('normalize.json')
  assert.ok(cases.length >= 300)
  for (const c of cases) {
    if (c.error) {
      assert.throws(() => crawlq.normalize(c.input), err => err.code === 'ERR_CRAWLQ_INVALID_ITEM' && err.reason === c.error, JSON.stringify(c.input))
    } else {
      const got = crawlq.normalize(c.input)
      assert.deepEqual([got.kind, got.canonical, got.host, got.fingerprint], [c.kind, c.canonical, c.host, c.fingerprint], JSON.stringify(c.input))
    }
  }
})

test('lone surrogates are replaced as in every language', () => {
  for (const c of load('normalize.json').invalid_text) {
    const text = JSON.parse(`"${c.utf16}"`) // keeps the lone surrogate
    if (c.error) {
      assert.throws(() => crawlq.normalize(text), err => err.code === 'ERR_CRAWLQ_INVALID_ITEM' && err.reason === c.error, c.utf16)
    } else {
      const got = crawlq.normalize(text)
      assert.deepEqual([got.kind, got.canonical, got.host, got.fingerprint], [c.kind, c.canonical, c.host, c.fingerprint], c.utf16)
    }
  }
})

test('shard vectors', () => {
  const { cases } = load('shards.json')
  assert.ok(cases.length >= 100)
  for (const c of cases) assert.equal(crawlq.shardOf(c.input, c.shards), c.shard, JSON.stringify(c))
})

const lines = text => text.split('\n').filter(Boolean)

function storedRecords (base) {
  const lanes = lines(redis.cli('--scan', '--pattern', `${base}:l:*`))
  const records = lanes.flatMap(lane => lines(redis.cli('LRANGE', lane, '0', '-1')))
  records.push(...lines(redis.cli('ZRANGE', `${base}:delayed`, '0', '-1')))
  return records.sort((a, b) => Number(JSON.parse(a).id) - Number(JSON.parse(b).id))
}

test('stored record bytes', async () => {
  const file = load('records.json')
  for (const c of file.cases) {
    const name = uniqueName('records')
    const q = await crawlq.Queue.connect(redis.url, name, { fixedClock: file.clock })
    await q.seed(toJs(c.items), toJs(c.options))
    assert.deepEqual(storedRecords(`crawlq:{${name}}`), c.expect, c.name)
    await q.close()
  }
})

test('key names', async () => {
  for (const c of load('keys.json').cases) {
    const prefix = uniqueName('vec')
    const q = await crawlq.Queue.connect(redis.url, c.queue, { keyPrefix: prefix })
    await q.seed(toJs(c.items))
    assert.deepEqual(lines(redis.cli('--scan', '--pattern', `${prefix}:*`)).sort(), c.expect.map(k => k.replace('{prefix}', prefix)))
    await q.close()
  }
})

test('operation scenarios', async () => {
  const file = load('scenarios.json')
  for (const scenario of file.scenarios) {
    const q = await crawlq.Queue.connect(redis.url, uniqueName('scenario'), { ...toJs(scenario.options), fixedClock: file.clock })
    const leases = []
    for (const [i, step] of scenario.steps.entries()) {
      const where = `${scenario.name}, step ${i} (${step.op})`
      const arg = 'lease' in step ? leases[step.lease] : 'leases' in step ? step.leases.map(j => leases[j]) : undefined
      let got
      try {
        switch (step.op) {
          case 'clock': q._setFixedClock(step.ms); break
          case 'seed': got = toVector(await q.seed(toJs(step.items), toJs(step.options ?? {}))); break
          case 'lease': {
            const fresh = await q.lease({ max: step.max, waitMs: step.wait_ms })
            leases.push(...fresh)
            got = toVector(fresh)
            break
          }
          case 'ack': got = await q.ack(arg, toJs(step.options ?? {})); break
          case 'ack_and_lease': {
            const { acked, leases: fresh } = await q.ackAndLease(arg, { max: step.max, waitMs: step.wait_ms })
            leases.push(...fresh)
            got = { acked, leases: toVector(fresh) }
            break
          }
          case 'nack': got = await q.nack(arg, toJs(step.options ?? {})); break
          case 'extend': got = await q.extend(arg, step.ttl_ms); break
          case 'release': got = await q.release(arg, toJs(step.options ?? {})); break
          case 'reclaim': got = toVector(await q.reclaim({ limit: step.limit })); break
          case 'stats': got = toVector(await q.stats()); break
          case 'dead': got = toVector(await q.dead({ limit: step.limit, offset: step.offset })); break
          case 'requeue_dead': got = await q.requeueDead(step.ids ?? undefined); break
          case 'is_finished': got = await q.isFinished(); break
          case 'purge_dead': got = await q.purgeDead(step.ids ?? undefined); break
          case 'set_host_delay': got = toVector(await q.setHostDelay(step.host, step.delay_ms)); break
          case 'host_info': got = toVector(await q.hostInfo(step.host)); break
          case 'ack_with_links': got = await q.ackWithLinks(arg, toJs(step.links), toJs(step.options ?? {})); got = { acked: got.acked, links: toVector(got.links) }; break
          case 'ack_with_links_and_lease': {
            const r = await q.ackWithLinksAndLease(arg, toJs(step.links), { ...toJs(step.options ?? {}), max: step.max, waitMs: step.wait_ms })
            leases.push(...r.leases)
            got = { acked: r.acked, links: toVector(r.links), leases: toVector(r.leases) }
            break
          }
          case 'wait_host_turn': got = await q.waitHostTurn(step.url, { lease: arg ?? null, timeoutMs: step.timeout_ms }); break
          case 'set_host_crawl_delay': got = toVector(await q.setHostCrawlDelay(step.host, step.delay_ms)); break
          case 'set_host_delay_after': got = toVector(await q.setHostDelayAfter(step.host, step.after, step.factor)); break
          case 'set_host_in_flight': got = toVector(await q.setHostInFlight(step.host, step.limit)); break
          case 'set_host_budget': got = toVector(await q.setHostBudget(step.host, step.urls)); break
          case 'set_default_host_budget': got = (await q.setDefaultHostBudget(step.urls)) ?? null; break
          case 'default_host_budget': got = await q.defaultHostBudget(); break
          case 'pause': got = await q.pause(step.duration_ms); break
          case 'resume': got = await q.resume(); break
          case 'is_paused': got = await q.isPaused(); break
          case 'list_hosts': got = toVector(await q.listHosts({ cursor: step.cursor, limit: step.limit })); break
          case 'remove_queue': got = await q.removeQueue({ evenIfLeased: step.even_if_leased ?? false }); break
          case 'delete_host': got = toVector(await q.deleteHost(step.host, { forgetSeen: step.forget_seen ?? false })); break
          case 'pause_host': got = toVector(await q.pauseHost(step.host, step.duration_ms)); break
          case 'resume_host': got = toVector(await q.resumeHost(step.host)); break
          case 'peek': got = toVector(await q.peek({ limit: step.limit })); break
          case 'peek_host': got = toVector(await q.peekHost(step.host, { limit: step.limit, offset: step.offset })); break
          case 'crawl_stats': got = toVector(await q.crawlStats(step.crawl)); break
          case 'set_crawl_cap': got = toVector(await q.setCrawlCap(step.crawl, step.cap)); break
          case 'set_crawl_weight': got = toVector(await q.setCrawlWeight(step.crawl, step.weight)); break
          case 'set_crawl_host_budget': got = toVector(await q.setCrawlHostBudget(step.crawl, step.urls)); break
          case 'pause_crawl': got = (await q.pauseCrawl(step.crawl)) ?? null; break
          case 'resume_crawl': got = (await q.resumeCrawl(step.crawl)) ?? null; break
          case 'crawls': got = await q.crawls(); break
          case 'delete_crawl': got = toVector(await q.deleteCrawl(step.crawl)); break
          default: assert.fail(`unknown op ${step.op}`)
        }
      } catch (err) {
        assert.equal(err.code, `ERR_CRAWLQ_${step.expect_error}`, `${where}: ${err.stack}`)
        continue
      }
      assert.ok(!('expect_error' in step), `${where}: no error, got ${JSON.stringify(got)}`)
      if ('expect' in step) assert.ok(matches(step.expect, got), `${where}: expected ${JSON.stringify(step.expect)}, got ${JSON.stringify(got)}`)
    }
    await q.close()
  }
})

/** A vector value with {"$bytes": base64} objects as byte strings (as the binding reads them). */
function nativeBytes (value) {
  if (Array.isArray(value)) return value.map(nativeBytes)
  if (value === null || typeof value !== 'object') return value
  const keys = Object.keys(value)
  if (keys.length === 1 && keys[0] === '$bytes') return Buffer.from(value.$bytes, 'base64')
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, nativeBytes(v)]))
}

/** Byte strings (a Buffer, or a Uint8Array from the WebAssembly build) back as {"$bytes": base64}. */
function vectorBytes (value) {
  if (value instanceof Uint8Array) return { $bytes: Buffer.from(value).toString('base64') }
  if (Array.isArray(value)) return value.map(vectorBytes)
  if (value === null || typeof value !== 'object') return value
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, vectorBytes(v)]))
}

// the request's own field names in JavaScript; the data inside them is left alone
const REQUEST_NAMES = { user_data: 'userData', found_on: 'foundOn' }
const requestToJs = r => Object.fromEntries(Object.entries(r).map(([k, v]) => [REQUEST_NAMES[k] ?? k, nativeBytes(v)]))
const requestToVector = r => Object.fromEntries(Object.entries(r).map(([k, v]) => [
  Object.entries(REQUEST_NAMES).find(([, js]) => js === k)?.[0] ?? k, vectorBytes(v)
]))

test('crawl requests store, read and key as requests.json says', async () => {
  const file = load('requests.json')
  const name = uniqueName('requests')
  const q = await crawlq.Queue.connect(redis.url, name, { fixedClock: 1_800_000_000_000 })
  for (const c of file.cases) {
    const request = requestToJs(c.request)
    assert.deepEqual(vectorBytes(crawlq.requestPayload(request)), c.payload, c.name)
    const report = await q.seedRequests([request])
    assert.equal(report.added, 1, c.name)
    const [lease] = await q.lease({ max: 1, waitMs: 0 })
    assert.equal(lease.key, c.key, c.name)
    assert.deepEqual(requestToVector(crawlq.requestOf(lease)), c.read, c.name)
    const record = redis.cli('HGET', `crawlq:{${name}}:leases`, `${lease.token}:${lease.id}`)
    assert.ok(record.includes(`"payload":${c.stored}}`), `${c.name}: ${record}`)
    assert.equal(await q.ack(lease), true)
  }
  for (const c of file.reads) {
    if (c.url === null) continue // a host item: no lease of one carries a URL to read
    await q.seed([{ url: c.url, payload: c.payload }])
    const [lease] = await q.lease({ max: 1, waitMs: 0 })
    if (c.error) {
      assert.throws(() => crawlq.requestOf(lease), err => err.code === `ERR_CRAWLQ_${c.error}`, c.name)
    } else {
      assert.deepEqual(requestToVector(crawlq.requestOf(lease)), c.read, c.name)
    }
    await q.ack(lease)
  }
  for (const c of file.updates) {
    // seeded as stored (a plain seed keeps the payload as it is), changed, stored by a release
    await q.seed([{ url: c.url, payload: nativeBytes(c.payload) }])
    const [lease] = await q.lease({ max: 1, waitMs: 0 })
    const changes = c.changes === null ? undefined : requestToJs(c.changes)
    if (c.error) {
      assert.throws(() => crawlq.requestUpdate(lease, changes), err => err.code === `ERR_CRAWLQ_${c.error}`, c.name)
      await q.ack(lease)
      continue
    }
    const payload = crawlq.requestUpdate(lease, changes)
    assert.deepEqual(vectorBytes(payload), c.result, c.name)
    assert.equal(await q.release(lease, { payload }), true)
    const [again] = await q.lease({ max: 1, waitMs: 0 })
    const record = redis.cli('HGET', `crawlq:{${name}}:leases`, `${again.token}:${again.id}`)
    assert.ok(record.includes(`"payload":${c.stored}}`), `${c.name}: ${record}`)
    await q.ack(again)
  }
  const sorting = await crawlq.Queue.connect(redis.url, `${name}-sorted`, { sortQuery: true })
  for (const c of file.sort_query) {
    const report = await sorting.seed([c.input])
    if (!report.added) continue
    const [lease] = await sorting.lease({ max: 1, waitMs: 0 })
    assert.equal(lease.url, c.canonical, c.input)
    await sorting.ack(lease)
  }
  await q.close()
  await sorting.close()
})
