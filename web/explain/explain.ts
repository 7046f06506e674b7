/**
 * The Explain page: pick a device profile (and a host, or the whole fleet) and see, per request
 * group, every candidate deployable with its verdict, reason and free units. The choice lives in
 * the URL (`?profile=&host=`), so a result can be bookmarked and Back returns to the previous one.
 */
import './explain.css'
import { html } from 'htm/preact'
import type { VNode } from 'preact'
import { useState } from 'preact/hooks'
import { Show, useLoad } from '../load.js'
import type { Page } from '../page.js'
import { setQuery, type Route } from '../router.js'
import { ExplainResult } from './explain-result.js'
import { explain, loadChoices, type Choices, type Explained } from './explain-data.js'

function NoProfiles(): VNode {
  return html`<section class="empty" aria-labelledby="noprof-h">
    <h2 id="noprof-h">No device profiles yet</h2>
    <p>Explain judges a device profile against the fleet. Create one first, for example:</p>
    <pre><code>openstack accelerator device profile create gpu '[{"resources:PGPU": "1"}]'</code></pre>
    <p>
      or <code>cyborg device-profile create gpu '[{"resources:PGPU": "1"}]'</code> (docs/cli.md),
      then reload this page. docs/explain.md says what each verdict means.
    </p>
  </section>`
}

function ExplainForm(props: { choices: Choices; profile?: string; host?: string }): VNode {
  const names = props.choices.profiles.map((p) => p.name)
  if (props.profile !== undefined && !names.includes(props.profile)) names.unshift(props.profile)
  const [profile, setProfile] = useState(props.profile ?? names[0] ?? '')
  const [host, setHost] = useState(props.host ?? '')
  const submit = (e: Event) => {
    e.preventDefault()
    setQuery({ profile, host })
  }
  const value = (e: Event) => (e.currentTarget as HTMLSelectElement).value
  return html`<form class="explain-form" aria-label="Explain a device profile" onSubmit=${submit}>
    <div class="field">
      <label for="x-profile">Device profile</label>
      <select
        id="x-profile"
        name="profile"
        value=${profile}
        onChange=${(e: Event) => setProfile(value(e))}
      >
        ${names.map((n) => html`<option key=${n} value=${n}>${n}</option>`)}
      </select>
    </div>
    <div class="field">
      <label for="x-host">Host (empty: the whole fleet)</label>
      <input
        id="x-host"
        name="host"
        type="text"
        list="x-hosts"
        autocomplete="off"
        placeholder="whole fleet"
        value=${host}
        onInput=${(e: Event) => setHost((e.currentTarget as HTMLInputElement).value.trim())}
      />
      <datalist id="x-hosts">
        ${props.choices.hosts.map((h) => html`<option key=${h} value=${h}></option>`)}
      </datalist>
    </div>
    <button type="submit">Explain</button>
  </form>`
}

function Result({ profile, host }: { profile: string; host?: string }): VNode {
  const { loaded } = useLoad(() => explain(profile, host), [profile, host])
  return html`<${Show}
    loaded=${loaded}
    what=${`the explain of device profile ${profile}`}
    draw=${(x: Explained) => html`<${ExplainResult} result=${x} />`}
  />`
}

function Explain({ route }: { route: Route }): VNode {
  const { loaded } = useLoad(loadChoices, [])
  const profile = route.query.get('profile') || undefined
  const host = route.query.get('host') || undefined
  return html`<${Show}
    loaded=${loaded}
    what="the device profiles"
    draw=${(choices: Choices) =>
      choices.profiles.length === 0 && profile === undefined
        ? html`<${NoProfiles} />`
        : html`<${ExplainForm}
              key=${route.query.toString()}
              choices=${choices}
              profile=${profile}
              host=${host}
            />
            ${
              profile === undefined
                ? html`<p class="note">Choose a profile and press Explain.</p>`
                : html`<${Result} profile=${profile} host=${host} />`
            }`}
  />`
}

export const explainPage: Page = { id: 'explain', title: 'Explain', draw: Explain }
