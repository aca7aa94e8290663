import { describe, expect, it } from "vitest"
import { baseFixture } from "./support/fixtures.js"
import { getJson, postJson, startSeededServer, useServer } from "./support/server.js"

/** Attacks that must never survive, in posts or in updates. */
const corpus = [
  `<script>alert(1)</script>`,
  `<SCRIPT SRC=https://evil.example/x.js></SCRIPT>`,
  `<img src=x onerror=alert(1)>`,
  `<p onclick="alert(1)" onmouseover='alert(2)'>hi</p>`,
  `<a href="javascript:alert(1)">x</a>`,
  `<a href="JaVaScRiPt:alert(1)">x</a>`,
  `<a href="&#106;avascript:alert(1)">x</a>`,
  `<a href=" javascript:alert(1)">x</a>`,
  `<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">x</a>`,
  `<img src="data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+">`,
  `<iframe src="https://evil.example"></iframe>`,
  `<iframe srcdoc="<script>alert(1)</script>"></iframe>`,
  `<style>body{background:url(javascript:alert(1))}</style>`,
  `<p style="background:url(javascript:alert(1))">styled</p>`,
  `<svg onload=alert(1)><circle r=1 /></svg>`,
  `<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>`,
  `<object data="https://evil.example/x.swf"></object><embed src="https://evil.example/x.swf">`,
  `<form action="https://evil.example"><input name=x><button>go</button></form>`,
  `<meta http-equiv="refresh" content="0;url=https://evil.example">`,
  `<base href="https://evil.example/">`,
  `<a href="vbscript:msgbox(1)">x</a>`,
  `<div><noscript><p title="</noscript><img src=x onerror=alert(1)>"></noscript></div>`,
  `<img src="https://ok.example/a.png" onload="alert(1)">`,
  `<a href="https://ok.example" onclick="alert(1)" target="_blank">ok</a>`
]

const forbidden = [/<script/i, /\bon[a-z]+\s*=/i, /javascript:/i, /vbscript:/i, /data:/i, /<iframe/i, /<style/i, /style=/i,
  /<svg/i, /<object/i, /<embed/i, /<form/i, /<meta/i, /<base/i, /srcdoc/i]

const fixture = baseFixture()
fixture.organizations[0]!.updates = corpus.map((html, i) => ({
  id: `u_${String(i).padStart(2, "0")}`, title: `Update ${i}`, slug: `update-${i}`, content: html,
  publishedAt: `2026-01-01T00:00:${String(i).padStart(2, "0")}.000Z`
}))

const server = useServer(() => startSeededServer(fixture))

const storedContent = async (id: string) => {
  const [row] = await server.db.query<{ content: string }>((sql) => sql`SELECT content FROM posts WHERE id = ${id}`)
  return row!.content
}

describe("sanitization", () => {
  it.each(corpus)("post content never keeps the attack in %s", async (html) => {
    const res = await postJson(`${server.api}/feedback`, { organizationId: "org_acme", boardId: "b_feat", title: "XSS", content: html })
    expect(res.status).toBe(200)
    const content = await storedContent(res.body.id)
    for (const pattern of forbidden) expect(content).not.toMatch(pattern)
    expect(content).not.toMatch(/<img/i) // posts carry no images at all
  })

  it("served update content never keeps an attack", async () => {
    const res = await getJson(`${server.api}/updates?organizationId=org_acme`)
    expect(res.body).toHaveLength(corpus.length)
    for (const update of res.body) {
      for (const pattern of forbidden) expect(update.content).not.toMatch(pattern)
      expect(update.excerpt).not.toMatch(/[<>]/)
    }
  })

  it("keeps the allowed formatting, and gives links the safe rel", async () => {
    const html = `<h1>T</h1><h3>S</h3><p>a<br>b <strong>c</strong> <em>d</em> <u>e</u> <s>f</s> <code>g</code></p>` +
      `<pre>h</pre><blockquote>i</blockquote><ul><li>j</li></ul><ol><li>k</li></ol>` +
      `<a href="https://example.com/x">l</a><a href="mailto:a@example.com">m</a>`
    const res = await postJson(`${server.api}/feedback`, { organizationId: "org_acme", boardId: "b_feat", title: "Format", content: html })
    const rel = ` rel="noopener noreferrer nofollow ugc"`
    expect(await storedContent(res.body.id)).toBe(
      `<h1>T</h1><h3>S</h3><p>a<br>b <strong>c</strong> <em>d</em> <u>e</u> <s>f</s> <code>g</code></p>` +
        `<pre>h</pre><blockquote>i</blockquote><ul><li>j</li></ul><ol><li>k</li></ol>` +
        `<a href="https://example.com/x"${rel}>l</a><a href="mailto:a@example.com"${rel}>m</a>`
    )
  })

  it("keeps http(s) images in updates only", async () => {
    const res = await getJson(`${server.api}/updates?organizationId=org_acme`)
    const withImage = res.body.find((u: { id: string }) => u.id === "u_22")
    expect(withImage.content).toBe(`<img src="https://ok.example/a.png">`)
  })
})

/** How deep elements nest in `html`, counted without recursion. */
const depthOf = (html: string) => {
  let depth = 0
  let max = 0
  for (const [, close, name] of html.matchAll(/<(\/?)([a-z0-9]+)[^>]*>/gi)) {
    if (name!.toLowerCase() === "br") continue
    depth += close === "/" ? -1 : 1
    max = Math.max(max, depth)
  }
  return max
}

describe("hostile markup (decision 0012)", () => {
  const post = (title: string, content: string, path = "feedback") =>
    postJson(`${server.api}/${path}`, { organizationId: "org_acme", boardId: "b_feat", title, content })

  // 20,000 characters each: what blocked the event loop for seconds, then overflowed the stack with a 500.
  const nested = {
    "<b> × 6,666": "<b>".repeat(6666),
    "<b><div> × 2,500": "<b><div>".repeat(2500),
    "<ul><li> × 2,500": "<ul><li>".repeat(2500),
    "<table><tr><td> × 1,333": "<table><tr><td>".repeat(1333),
    "<template> × 2,000": "<template>".repeat(2000),
    "<svg><g> × 2,500": "<svg><g>".repeat(2500)
  }

  it.each(Object.entries(nested))("stores %s as shallow HTML, and suggests for it", async (name, content) => {
    const res = await post(`Nested ${name}`, content)
    expect(res.status).toBe(200)
    const stored = await storedContent(res.body.id)
    expect(depthOf(stored)).toBeLessThanOrEqual(32)
    const suggestions = await post(`Nested ${name}`, content, "suggestions")
    expect(suggestions.status).toBe(200)
  })

  it("keeps every word of deeply nested text, in order", async () => {
    const content = Array.from({ length: 2000 }, (_, i) => `<b>w${i} `).join("")
    const res = await post("Deep words", content)
    expect(res.status).toBe(200)
    const stored = await storedContent(res.body.id)
    expect(depthOf(stored)).toBeLessThanOrEqual(32)
    const words = stored.replace(/<[^>]*>/g, "").trim().split(/\s+/)
    expect(words).toEqual(Array.from({ length: 2000 }, (_, i) => `w${i}`))
    const [row] = await server.db.query<{ excerpt: string }>((sql) => sql`SELECT excerpt FROM posts WHERE id = ${res.body.id}`)
    expect(row!.excerpt.startsWith("w0 w1 w2 w3")).toBe(true)
  })

  it("keeps the text of an element with an `is` attribute in the excerpt", async () => {
    const res = await post("Customized", `<p>before</p><b is="foo">hidden</b><p>after</p>`)
    expect(res.status).toBe(200)
    const [row] = await server.db.query<{ excerpt: string }>((sql) => sql`SELECT excerpt FROM posts WHERE id = ${res.body.id}`)
    expect(row!.excerpt).toBe("before hidden after")
  })
})
