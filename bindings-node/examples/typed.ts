// Uses the whole API with types; `tsc --noEmit --strict` checks it against index.d.ts (the
// test suite does) and it runs as plain JavaScript after type stripping.
import { Queue, type Lease, type NackOutcome, type SeedReport, type Stats, type HostInfo, type DeadLetter, type CrawlqErrorCode, type CrawlDeletion } from 'crawlq'

export async function tour(url: string, name: string): Promise<Stats> {
  const q: Queue = await Queue.connect(url, name, { leaseTtlMs: 60_000, hostDelayMs: 0, backoff: 'exponential' })
  const report: SeedReport = await q.seed(['https://example.com/', { url: 'https://example.org/', priority: 5, payload: { depth: 1 } }])
  const bad: number[] = report.invalid.map(i => i.index)
  const leases: Lease[] = await q.lease({ max: 2, waitMs: 1000 })
  const first: Lease = leases[0]
  const deadline: number = await q.extend(first, 30_000)
  const many: Array<number | null> = await q.extend(leases, 30_000)
  const acked: boolean = await q.ack(first)
  const outcome: NackOutcome = await q.nack(leases[1], { reason: 'HTTP 503', delayMs: 0 })
  const released: boolean[] = await q.release(await q.lease({ waitMs: 1000 }))
  const info: HostInfo = await q.setHostDelay('example.com', 500)
  const dead: DeadLetter[] = await q.dead({ limit: 10 })
  for await (const lease of q.work({ max: 5, waitMs: 100, stopWhenEmpty: true, signal: AbortSignal.timeout(10_000) })) {
    const url: string | null = lease.url
    await q.ack(lease)
    void url
  }
  try {
    await q.extend(first, 1000)
  } catch (err) {
    const code = (err as { code?: CrawlqErrorCode }).code
    if (code !== 'ERR_CRAWLQ_LEASE_LOST') throw err
  }
  await q.seed(['https://example.com/old'], { crawl: 'old-run' })
  const removed: number[] = []
  const gone: CrawlDeletion = await q.deleteCrawl('old-run', { onProgress: (soFar: CrawlDeletion) => { removed.push(soFar.removed) } })
  void [bad, deadline, many, acked, outcome, released, info, dead, gone]
  return q.stats()
}
