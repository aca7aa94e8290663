import { RequestString } from "@hearken/api/effect"
import { Schema } from "effect"

/** An absolute `http:` or `https:` URL. */
export const HttpUrl = RequestString.check(Schema.makeFilter<string>(
  (s) => URL.canParse(s) && ["http:", "https:"].includes(new URL(s).protocol),
  { expected: "an http(s) URL" }
))
