/** Style sheets imported by the pages' modules: esbuild bundles them into app.css. */
declare module '*.css'
