/** `build.mjs` loads `.css` files as minified text. */
declare module "*.css" {
  const css: string
  export default css
}
