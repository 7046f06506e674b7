/**
 * The login form, shown where the API answered 401: user name, password and project (and, when
 * they are not `Default`, the domains) go to the API, which asks Keystone; or a token is pasted.
 * Either way the token is kept in memory only (web/api.ts) and never shown; the password field
 * is cleared at once.
 */
import { html } from 'htm/preact'
import type { VNode } from 'preact'
import { useState } from 'preact/hooks'
import { setToken } from './api.js'
import { logIn, type LoginFields } from './session.js'
import './session.css'

/** The value of the input `name` of `form`, trimmed. */
function field(form: HTMLFormElement, name: string): HTMLInputElement {
  return form.elements.namedItem(name) as HTMLInputElement
}

export function LoginForm(): VNode {
  const [error, setError] = useState<string | undefined>(undefined)
  const [busy, setBusy] = useState(false)
  const submit = (e: Event) => {
    e.preventDefault()
    const form = e.currentTarget as HTMLFormElement
    const password = field(form, 'password')
    const fields: LoginFields = {
      username: field(form, 'username').value.trim(),
      password: password.value,
      project: field(form, 'project').value.trim(),
    }
    password.value = ''
    for (const name of ['user_domain', 'project_domain'] as const) {
      const value = field(form, name).value.trim()
      if (value !== '') fields[name] = value
    }
    setBusy(true)
    setError(undefined)
    logIn(fields).then(
      () => setBusy(false),
      (err: Error) => {
        setBusy(false)
        setError(err.message)
        password.focus()
      },
    )
  }
  const paste = (e: Event) => {
    e.preventDefault()
    const input = field(e.currentTarget as HTMLFormElement, 'token')
    const value = input.value
    input.value = ''
    setToken(value)
  }
  return html`<section class="login" aria-labelledby="login-title">
    <h2 id="login-title">Log in</h2>
    <form class="login-form" onSubmit=${submit}>
      <label for="login-username">User name</label>
      <input id="login-username" name="username" autocomplete="username" required />
      <label for="login-password">Password</label>
      <input
        id="login-password"
        name="password"
        type="password"
        autocomplete="current-password"
        required
      />
      <label for="login-project">Project</label>
      <input id="login-project" name="project" required />
      <details>
        <summary>Domains (Default when left empty)</summary>
        <label for="login-user-domain">User domain</label>
        <input id="login-user-domain" name="user_domain" placeholder="Default" />
        <label for="login-project-domain">Project domain</label>
        <input id="login-project-domain" name="project_domain" placeholder="Default" />
      </details>
      <button type="submit" disabled=${busy}>${busy ? 'Logging in…' : 'Log in'}</button>
      ${error === undefined ? '' : html`<p role="alert" class="tone-bad">✕ ${error}</p>`}
    </form>
    <details class="paste">
      <summary>Or paste a Keystone token</summary>
      <form class="token" onSubmit=${paste}>
        <label for="token">Keystone token</label>
        <input id="token" name="token" type="password" autocomplete="off" required />
        <button type="submit">Use token</button>
      </form>
    </details>
    <p class="hint">
      The API asks Keystone for you. The token is kept in this page's memory only (a reload forgets
      it), sent as X-Auth-Token, never shown.
    </p>
  </section>`
}
