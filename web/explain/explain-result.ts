/** An explain's answer as tables: one per request group, one row per candidate deployable. */
import { html } from 'htm/preact'
import type { VNode } from 'preact'
import {
  groupTitle,
  placementWord,
  verdictMark,
  type Candidate,
  type Explained,
  type ExplainGroup,
} from './explain-data.js'

function Row({ c }: { c: Candidate }): VNode {
  const mark = verdictMark(c.rule)
  return html`<tr data-deployable=${c.deployable_name} data-host=${c.hostname} data-rule=${c.rule}>
    <th scope="row">${c.deployable_name}</th>
    <td>${c.hostname}</td>
    <td class=${`tone-${mark.tone}`} data-testid="verdict">
      <span aria-hidden="true">${mark.icon} </span>${mark.word}
    </td>
    <td class="reason">${c.reason}</td>
    <td data-testid="free-units">${c.free_units}</td>
    <td>
      ${placementWord(c)}${
        c.placement_reason ? html`<br /><span class="note">${c.placement_reason}</span>` : ''
      }
    </td>
  </tr>`
}

function Group({ g }: { g: ExplainGroup }): VNode {
  const id = `group-${g.group_id}-${g.resource_class ?? 'any'}`
  return html`<section aria-labelledby=${id} class="explain-group" data-group=${g.group_id}>
    <h3 id=${id}>
      ${groupTitle(g)}${' '}
      <span class="count" data-testid="fits">${g.fits} of ${g.candidates.length} fit</span>
    </h3>
    ${
      g.candidates.length === 0
        ? html`<p>No deployable to judge here: no device on this host, or none reported yet.</p>`
        : html`<div
            class="scroll"
            tabindex="0"
            role="region"
            aria-label=${`${groupTitle(g)}: candidates`}
          >
            <table>
              <thead>
                <tr>
                  <th scope="col">Deployable</th>
                  <th scope="col">Host</th>
                  <th scope="col">Verdict</th>
                  <th scope="col">Reason</th>
                  <th scope="col">Free units</th>
                  <th scope="col">Placement</th>
                </tr>
              </thead>
              <tbody>
                ${g.candidates.map((c) => html`<${Row} key=${c.deployable_uuid} c=${c} />`)}
              </tbody>
            </table>
          </div>`
    }
  </section>`
}

function PlacementNote({ p }: { p: Explained['placement'] }): VNode | string {
  if (p === null) return html`<p class="note">The conductor did not say what Placement offers.</p>`
  if (!p.configured)
    return html`<p class="note">Placement is not configured: this is Cyborg's view alone.</p>`
  if (p.error !== undefined)
    return html`<p class="note tone-warn">
      <span aria-hidden="true">! </span>Placement did not answer: ${p.error}
    </p>`
  return p.note === undefined ? '' : html`<p class="note">${p.note}</p>`
}

export function ExplainResult({ result }: { result: Explained }): VNode {
  return html`<section aria-labelledby="result-h" data-testid="explain-result">
    <h2 id="result-h">${result.device_profile.name} on ${result.hostname ?? 'the whole fleet'}</h2>
    <${PlacementNote} p=${result.placement} />
    ${
      result.groups.length === 0
        ? html`<p>This profile has no request group.</p>`
        : result.groups.map(
            (g) => html`<${Group} key=${`${g.group_id}-${g.resource_class}`} g=${g} />`,
          )
    }
  </section>`
}
