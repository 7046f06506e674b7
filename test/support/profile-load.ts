/**
 * An API client loop that keeps creating device profiles (POST /v2/device_profiles, written by a
 * conductor over the bus) and records every answer with when it was asked and answered.
 */
export interface Attempt {
  name: string
  status: number
  body: string
  startedAt: number
  endedAt: number
}

export interface ProfileLoad {
  /** Stops asking, waits for the answers in flight, returns every attempt. */
  stop(): Promise<Attempt[]>
}

export function profileLoad(
  api: string,
  prefix: string,
  { workers = 2, pauseMs = 50 } = {},
): ProfileLoad {
  const attempts: Attempt[] = []
  let stopped = false
  let n = 0
  const one = async (name: string) => {
    const startedAt = Date.now()
    let status = 0
    let body: string
    try {
      const res = await fetch(`${api}/v2/device_profiles`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify([
          { name, description: null, groups: [{ 'resources:CUSTOM_SSD': '1' }] },
        ]),
      })
      status = res.status
      body = await res.text()
    } catch (err) {
      body = String(err)
    }
    attempts.push({ name, status, body, startedAt, endedAt: Date.now() })
  }
  const worker = async () => {
    while (!stopped) {
      await one(`${prefix}-${n++}`)
      await new Promise((r) => setTimeout(r, pauseMs))
    }
  }
  const running = Promise.all(Array.from({ length: workers }, worker))
  return {
    async stop() {
      stopped = true
      await running
      return attempts
    },
  }
}
