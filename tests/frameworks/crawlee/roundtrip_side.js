'use strict'
// Crawlee's (JavaScript) side of the adapter round trip (tests/frameworks/roundtrip.py), through
// the crawlq request manager only:
//
//   node roundtrip_side.js seed|take|check REDIS_URL QUEUE[,QUEUE...]   (ROUNDTRIP_SPEC: JSON)
//
// `seed` adds a Crawlee request per queue (its own uniqueKey and a session rotation count: what
// only Crawlee understands); `take` fetches the request another framework seeded and reclaims it
// after a failure, as a crawler does before a retry; `check` fetches a request Crawlee seeded
// after another framework retried it and marks it handled. Prints one JSON line per queue: what
// Crawlee sees of the request. CRAWLQ_NODE names the addon's folder; NODE_PATH its node_modules.

const path = require('node:path')
const { Request, RequestState } = require('@crawlee/core')
const { CrawlqRequestManager } = require(path.join(process.env.CRAWLQ_NODE, 'crawlee.js'))

function view (request) {
  return {
    url: request.url,
    method: request.method,
    headers: Object.entries(request.headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]),
    body_b64: Buffer.from(request.payload ?? '').toString('base64'),
    user_data: Object.fromEntries(Object.entries(request.userData).filter(([k]) => k !== 'label' && k !== '__crawlee')),
    label: request.label ?? null,
    depth: request.crawlDepth,
    retries: request.retryCount
  }
}

async function fetchOne (manager) {
  const deadline = Date.now() + 10_000
  while (Date.now() < deadline) {
    const request = await manager.fetchNextRequest()
    if (request) return request
  }
  throw new Error('nothing to fetch')
}

async function main () {
  const [phase, redisUrl, queues] = process.argv.slice(2)
  const spec = JSON.parse(process.env.ROUNDTRIP_SPEC ?? '{}')
  for (const queue of queues.split(',')) {
    const manager = await CrawlqRequestManager.open(redisUrl, queue, {
      waitMs: 500,
      releaseOnSignal: false,
      queueOptions: { backoffBaseMs: 1, backoffJitter: 0, sortQuery: true }
    })
    let out
    if (phase === 'seed') {
      const request = new Request({
        url: spec.urls[queue],
        uniqueKey: `crawlee-own-key:${queue}`,
        method: spec.method,
        headers: Object.fromEntries(spec.headers),
        payload: Buffer.from(spec.body_b64, 'base64'),
        userData: spec.user_data,
        label: spec.label
      })
      request.crawlDepth = spec.depth
      request.sessionRotationCount = 2
      const added = await manager.addRequest(request)
      out = { seeded: !added.wasAlreadyPresent }
    } else if (phase === 'take') {
      const request = await fetchOne(manager)
      out = view(request)
      // what a crawler does with a failed request it will retry
      request.state = RequestState.ERROR_HANDLER
      request.pushErrorMessage(new Error('HTTP 503'))
      request.retryCount++
      await manager.reclaimRequest(request)
    } else {
      const request = await fetchOne(manager)
      out = view(request)
      out.own = { sessionRotationCount: request.sessionRotationCount }
      await manager.markRequestHandled(request)
    }
    const stats = await manager.queue.stats()
    out.answer = { retried: stats.retriedTotal, done: stats.done }
    await manager.close()
    console.log(JSON.stringify({ queue, ...out }))
  }
}

main().catch(err => {
  console.error(err)
  process.exit(1)
})
