/**
 * The admin actions of the device page: Disable, Enable, Mark ready, Clean. Each is offered only
 * when policy lets the caller take it (`useCan`), and taken only after a confirmation in a native
 * <dialog> that says what it does; the API's answer (or its refusal) is then shown in words.
 */
import { html } from 'htm/preact'
import type { VNode } from 'preact'
import { useEffect, useRef, useState } from 'preact/hooks'
import { sendJson } from '../api.js'
import { useCan } from '../session.js'

export interface DeviceFields {
  uuid: string
  hostname: string
  status?: string
  lifecycle?: string
}

interface Action {
  id: 'disable' | 'enable' | 'ready' | 'clean'
  label: string
  /** What it does, in the dialog. */
  effect: string
  minor: number
  body?: unknown
}

const ACTIONS: Record<Action['id'], Omit<Action, 'id'>> = {
  disable: {
    label: 'Disable',
    effect:
      'Puts the device in maintenance (status maintaining): Placement reserves all of its ' +
      'accelerators, so no new request is placed on it. Units in use stay attached.',
    minor: 3,
  },
  enable: {
    label: 'Enable',
    effect:
      'Enables the device again (status enabled): Placement offers its free accelerators to new requests.',
    minor: 3,
  },
  ready: {
    label: 'Mark ready',
    effect:
      "Marks the device ready: the host's agent installs it, and it becomes active (or error, with a reason).",
    minor: 4,
  },
  clean: {
    label: 'Clean',
    effect:
      "Asks the host's agent again to clean the device's units left cleaning or whose clean failed " +
      '(docs/cleaning.md); they return to service once a clean succeeds.',
    minor: 8,
    body: {},
  },
}

/** The actions that apply to `device` now (Disable or Enable by its status; Mark ready by its lifecycle). */
function applicable(device: DeviceFields): Action['id'][] {
  const ids: Action['id'][] = [device.status === 'maintaining' ? 'enable' : 'disable']
  if (device.lifecycle === 'inactive' || device.lifecycle === 'error') ids.push('ready')
  ids.push('clean')
  return ids
}

type Outcome = { ok: true; text: string } | { ok: false; text: string } | undefined

function answerText(label: string, answer: unknown): string {
  if (answer === null) return `${label}: done.`
  const a = answer as { status?: string; lifecycle?: string; units?: unknown[]; forced?: boolean }
  if (Array.isArray(a.units))
    return `${label}: asked for ${a.units.length} unit(s)${a.forced ? ' (forced back in service)' : ''}.`
  if (a.lifecycle !== undefined) return `${label}: done; lifecycle now ${a.lifecycle}.`
  return `${label}: done.`
}

export function Actions({ device, onDone }: { device: DeviceFields; onDone: () => void }): VNode {
  const can: Record<Action['id'], boolean> = {
    disable: useCan('cyborg:device:disable'),
    enable: useCan('cyborg:device:enable'),
    ready: useCan('cyborg:device:ready'),
    clean: useCan('cyborg:device:clean'),
  }
  const [asking, setAsking] = useState<Action['id'] | undefined>(undefined)
  const [busy, setBusy] = useState(false)
  const [outcome, setOutcome] = useState<Outcome>(undefined)
  const dialog = useRef<HTMLDialogElement>(null)
  const opener = useRef<HTMLElement | null>(null)
  const result = useRef<HTMLDivElement>(null)

  useEffect(() => {
    const d = dialog.current
    if (asking !== undefined && d !== null && !d.open) d.showModal()
  }, [asking])

  const offered = applicable(device).filter((id) => can[id])
  if (offered.length === 0 && outcome === undefined) return html``

  const ask = (id: Action['id'], e: Event) => {
    opener.current = e.currentTarget as HTMLElement
    setAsking(id)
  }
  /** Closes the dialog; focus goes back to the button that opened it. */
  const close = () => {
    dialog.current?.close()
  }
  const onClose = () => {
    setAsking(undefined)
    if (opener.current?.isConnected) opener.current.focus()
  }
  const confirm = async () => {
    const id = asking!
    const a = ACTIONS[id]
    close()
    setBusy(true)
    setOutcome(undefined)
    try {
      const answer = await sendJson('POST', `/v2/devices/${device.uuid}/${id}`, a.body, a.minor)
      setOutcome({ ok: true, text: answerText(a.label, answer) })
    } catch (err) {
      setOutcome({ ok: false, text: `${a.label} refused: ${(err as Error).message}` })
    }
    setBusy(false)
    result.current?.focus()
    onDone()
  }
  const action = asking === undefined ? undefined : ACTIONS[asking]
  return html`<section aria-labelledby="actions-h" class="actions">
    <h2 id="actions-h">Actions</h2>
    <div class="buttons">
      ${offered.map(
        (id) =>
          html`<button
            type="button"
            key=${id}
            data-action=${id}
            disabled=${busy}
            onClick=${(e: Event) => ask(id, e)}
          >
            ${ACTIONS[id].label}…
          </button>`,
      )}
    </div>
    <div ref=${result} tabindex="-1" data-testid="action-result">
      <p role="status" class="tone-ok">${outcome?.ok ? outcome.text : busy ? 'Working…' : ''}</p>
      ${
        outcome !== undefined && !outcome.ok
          ? html`<p role="alert" class="tone-bad">${outcome.text}</p>`
          : ''
      }
    </div>
    <dialog
      ref=${dialog}
      aria-labelledby="confirm-h"
      aria-describedby="confirm-d"
      onClose=${onClose}
    >
      ${
        action === undefined
          ? ''
          : html`<h2 id="confirm-h">${action.label} device ${device.hostname}?</h2>
              <p id="confirm-d">${action.effect}</p>
              <p class="note"><code>${device.uuid}</code></p>
              <div class="buttons">
                <button type="button" data-confirm onClick=${confirm}>${action.label}</button>
                <button type="button" data-cancel onClick=${close} autofocus>Cancel</button>
              </div>`
      }
    </dialog>
  </section>`
}
