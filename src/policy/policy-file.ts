/**
 * policy.yaml: rule overrides in oslo.policy's file format, a YAML (or JSON, which YAML reads)
 * mapping of rule name to rule text. Where it is and what it says; what the rules mean is
 * rule-set.ts's business.
 */
import { existsSync, readFileSync } from 'node:fs'
import { dirname, isAbsolute, join } from 'node:path'
import { parse, YAMLParseError } from 'yaml'
import { ConfigError } from '../domain/errors.js'
import { rawErrorMessage } from '../domain/error-message.js'

/** `[oslo_policy] policy_file`'s default; this one, unlike a file named explicitly, may be absent. */
export const DEFAULT_POLICY_FILE = 'policy.yaml'

/** Where a relative policy file is looked for after the configuration files' directories. */
export const POLICY_SEARCH_DIRS: readonly string[] = ['/etc/cyborg']

export interface FindPolicyFileOptions {
  /** The configuration files that were read, lowest precedence first. */
  configFiles?: readonly string[]
  /** @default POLICY_SEARCH_DIRS */
  searchDirs?: readonly string[]
  /** @default fs.existsSync */
  exists?: (path: string) => boolean
}

/**
 * The policy file to read: an absolute path as is; a relative one next to the last configuration
 * file that has it, then in each search directory. Undefined when the default file is nowhere.
 * @throws ConfigError when a file named explicitly does not exist.
 */
export function findPolicyFile(
  policyFile: string,
  options: FindPolicyFileOptions = {},
): string | undefined {
  const { configFiles = [], searchDirs = POLICY_SEARCH_DIRS, exists = existsSync } = options
  const candidates = isAbsolute(policyFile)
    ? [policyFile]
    : [
        ...[...configFiles].reverse().map((f) => join(dirname(f), policyFile)),
        ...searchDirs.map((d) => join(d, policyFile)),
      ]
  const found = [...new Set(candidates)].find((c) => exists(c))
  if (found !== undefined || policyFile === DEFAULT_POLICY_FILE) return found
  throw new ConfigError(
    `[oslo_policy] policy_file: ${policyFile} does not exist (looked in: ${[...new Set(candidates)].join(', ')})`,
    { details: { section: 'oslo_policy', option: 'policy_file', candidates } },
  )
}

/**
 * The overrides in `text` (the contents of `file`): rule name → rule text.
 * @throws ConfigError naming the file (and the line, or the rule) when it is not such a mapping.
 */
export function parsePolicyText(text: string, file: string): Record<string, string> {
  let doc: unknown
  try {
    doc = parse(text, { uniqueKeys: true })
  } catch (err) {
    const line = err instanceof YAMLParseError ? ` at line ${err.linePos?.[0].line ?? '?'}` : ''
    const why = rawErrorMessage(err).split('\n')[0]
    throw new ConfigError(`${file}: not valid YAML or JSON${line}: ${why}`, {
      details: { file },
      cause: err,
    })
  }
  if (doc === null || doc === undefined) return {}
  if (typeof doc !== 'object' || Array.isArray(doc)) {
    throw new ConfigError(
      `${file}: expected a mapping of rule name to rule, e.g. "cyborg:arq:get_all": "rule:admin_api"`,
      {
        details: { file },
      },
    )
  }
  const rules: Record<string, string> = {}
  for (const [name, value] of Object.entries(doc as Record<string, unknown>)) {
    if (typeof value !== 'string') {
      throw new ConfigError(
        `${file}: policy rule "${name}": the rule must be a string, e.g. "role:admin" (got ${JSON.stringify(value)})`,
        {
          details: { file, rule: name },
        },
      )
    }
    rules[name] = value
  }
  return rules
}

/** Reads and parses a policy file. */
export function readPolicyFile(file: string): Record<string, string> {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new ConfigError(`${file}: cannot read the policy file: ${(err as Error).message}`, {
      details: { file },
      cause: err,
    })
  }
  return parsePolicyText(text, file)
}
