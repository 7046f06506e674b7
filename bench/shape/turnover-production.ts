/**
 * bench/turnover.ts's production shape (issue 28 part 1): for each cleaning setting, the api,
 * conductor and agent processes (shape/processes.ts) loaded with bind cycles at each level; and,
 * in the same run, a baseline checkout (the code of 34807ec, which has no cleaning) as the
 * `clean = none` equivalent. Each cycle releases one unit, so per cycle is per release.
 */
import { measureLevel, type LevelFigures } from './level.js'
import { startShape } from './processes.js'

export const SETTINGS = [
  { name: 'clean-none', clean: 'none', delayMs: 0 },
  { name: 'clean-0ms', clean: 'auto', delayMs: 0 },
  { name: 'clean-50ms', clean: 'auto', delayMs: 50 },
] as const

export interface ProductionRun extends LevelFigures {
  round: number
  code: 'main' | 'baseline'
  setting: string
}

async function runSetting(
  options: { placementUrl: string; levels: number[]; seconds: number; round: number },
  code: 'main' | 'baseline',
  setting: (typeof SETTINGS)[number],
  baselineRoot: string | undefined,
): Promise<ProductionRun[]> {
  const shape = await startShape({
    placementUrl: options.placementUrl,
    ...(code === 'baseline'
      ? { root: baselineRoot!, baseline: true }
      : { clean: setting.clean, cleanDelayMs: setting.delayMs }),
  })
  const out: ProductionRun[] = []
  try {
    const target = { ...shape, mariadb: true, placementUrl: options.placementUrl }
    for (const level of options.levels) {
      const figures = await measureLevel(target, level, options.seconds)
      out.push({
        round: options.round,
        code,
        setting: code === 'baseline' ? '34807ec' : setting.name,
        ...figures,
      })
      process.stderr.write(
        `turnover production ${code} ${setting.name} ${level} in flight: ${figures.cyclesPerSecond} cycles/s, ${figures.bindFailed} BindFailed\n`,
      )
    }
  } finally {
    await shape.stop()
  }
  return out
}

/** Every run; the baseline (when given) first in each round, then main's settings (reversed in odd rounds). */
export async function productionTurnover(options: {
  placementUrl: string
  levels: number[]
  seconds: number
  rounds: number
  baselineRoot: string | undefined
}) {
  const runs: ProductionRun[] = []
  for (let round = 0; round < options.rounds; round++) {
    const o = { ...options, round }
    if (options.baselineRoot)
      runs.push(...(await runSetting(o, 'baseline', SETTINGS[0], options.baselineRoot)))
    const order = round % 2 === 0 ? SETTINGS : [...SETTINGS].reverse()
    for (const s of order) runs.push(...(await runSetting(o, 'main', s, undefined)))
  }
  const mean = (setting: string, level: number) => {
    const xs = runs.filter((r) => r.setting === setting && r.inFlight === level)
    return xs.length ? xs.reduce((a, r) => a + r.cyclesPerSecond, 0) / xs.length : NaN
  }
  const ratio = (a: number, b: number) =>
    Number.isFinite(a / b) ? Math.round((a / b) * 100) / 100 : null
  return {
    /** Per level: each cleaning setting's cycles/s over main's `clean = none` (goal ≥ 0.9). */
    ratioToCleanNone: Object.fromEntries(
      options.levels.map((l) => [
        l,
        Object.fromEntries(
          SETTINGS.slice(1).map((s) => [s.name, ratio(mean(s.name, l), mean('clean-none', l))]),
        ),
      ]),
    ),
    /** Per level: main's `clean = none` cycles/s over 34807ec's (goal ≥ 1). */
    cleanNoneOverBaseline: Object.fromEntries(
      options.levels.map((l) => [l, ratio(mean('clean-none', l), mean('34807ec', l))]),
    ),
    runs,
  }
}
