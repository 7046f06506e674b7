// The one-line message of the `cyborg` command's failure reports; it lives in the domain so that
// every layer can use it.
export { errorMessage } from '../domain/error-message.js'
