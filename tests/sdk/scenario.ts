// A client team's calls, written against the TypeScript types openapi-typescript generates from
// openapi/cardvault.yaml, through openapi-fetch. The SDK tier generates `schema.d.ts` beside a
// copy of this file in a temporary directory and type-checks both with `tsc --strict --noEmit`,
// so a weaker or renamed generated type fails the build.
import createClient from "openapi-fetch";
import type { components, paths } from "./schema";

type Card = components["schemas"]["Card"];
type CardListItem = components["schemas"]["CardListItem"];
type ExtendedCard = components["schemas"]["ExtendedCard"];
type DoneCard = components["schemas"]["DoneCard"];
type ApiError = components["schemas"]["ApiError"];
type FolderColor = components["schemas"]["FolderColor"];
type ProcessingState = components["schemas"]["ProcessingState"];
type ApiKey = components["schemas"]["ApiKey"];
type Scope = components["schemas"]["Scope"];

const client = createClient<paths>({
  baseUrl: "http://127.0.0.1:8000/v1",
  headers: { Authorization: "Bearer cvk_..." },
});

function describe(error: ApiError): string {
  const fields = error.details?.fields?.map((f) => `${f.location}:${f.field} ${f.message}`) ?? [];
  return [error.code, error.error, error.requestId ?? "", ...fields].join(" ");
}

function title(card: Card): string {
  // Required and nullable: a string or null, never undefined.
  const notes: string | null = card.notes;
  const folders: string[] = card.folderIds;
  return `${card.type} ${card.content.slice(0, 40)} ${notes ?? ""} ${folders.length}`;
}

function row(item: CardListItem): string {
  const state: ProcessingState | undefined = item.processingStatus?.state;
  const when: number = item.createdAt;
  return `${item.id} ${item.tags.join(",")} ${item.url ?? ""} ${state ?? ""} ${when}`;
}

function extended(card: ExtendedCard): string {
  const price = card.linkPrice ? `${card.linkPrice.amount} ${card.linkPrice.currency}` : "";
  const stages = card.processingStatus?.stages.map((s) => `${s.name}=${s.state}`) ?? [];
  return [card.isArchived, card.archivedAt ?? "", price, ...stages, card.audioWaveform?.grid.length ?? 0].join(" ");
}

function done(card: DoneCard): number {
  return card.completedAt;
}

function keyLabel(key: ApiKey): string {
  // lastChars is null for keys made before keys kept them.
  const scopes: Scope[] = key.scopes;
  return `${key.name || key.id} ${key.prefix}…${key.lastChars ?? "????"} ${scopes.join(" ")} ${key.lastUsedAt ?? "never"}`;
}

export async function firstDay(): Promise<string[]> {
  const out: string[] = [];
  const made = await client.POST("/cards", {
    params: { header: { "Idempotency-Key": "ts-first-day" } },
    body: { content: "https://example.com", tags: ["reading"] },
  });
  if (made.error) throw new Error(describe(made.error));
  const id: string = made.data.cardId;
  out.push(title(made.data.card));
  const now = await client.GET("/changes", { params: { query: { cursor: "latest" } } });
  if (now.error) throw new Error(describe(now.error));
  const kept: string = now.data.pageInfo.nextCursor;

  let cursor: string | undefined;
  do {
    const page = await client.GET("/cards", {
      params: { query: { limit: 50, tag: ["reading"], sort: "oldest", cursor } },
    });
    if (page.error) throw new Error(describe(page.error));
    out.push(...page.data.items.map(row));
    cursor = page.data.pageInfo.nextCursor ?? undefined;
  } while (cursor);

  const searched = await client.GET("/cards", {
    params: { query: { q: "tag:reading type:link example", include: ["highlights"] } },
  });
  if (searched.error) throw new Error(describe(searched.error));
  for (const item of searched.data.items) {
    for (const fragment of item.highlights?.content ?? []) {
      const chars = Array.from(fragment.text);
      out.push(...fragment.matches.map((m) => chars.slice(m.start, m.end).join("")));
    }
  }

  // Read-modify-write without losing another device's edit: If-Match with the ETag read, a
  // 412 PRECONDITION_FAILED (details.etag) when the card changed meanwhile; If-None-Match: 304.
  const read = await client.GET("/cards/{cardId}", { params: { path: { cardId: id } } });
  const etag = read.response.headers.get("ETag") ?? "*";
  const unchanged = await client.GET("/cards/{cardId}", {
    params: { path: { cardId: id }, header: { "If-None-Match": etag } },
  });
  out.push(String(unchanged.response.status === 304));
  const updated = await client.PATCH("/cards/{cardId}", {
    params: { path: { cardId: id }, header: { "If-Match": etag } },
    body: { notes: null, tags: ["later"] },
  });
  if (updated.error?.code === "PRECONDITION_FAILED") out.push(String(updated.error.details?.etag));
  if (updated.data) out.push(title(updated.data));

  const finished = await client.POST("/cards/{cardId}/done", { params: { path: { cardId: id } } });
  if (finished.data) out.push(String(done(finished.data)));

  const archived = await client.POST("/cards/{cardId}/archive", { params: { path: { cardId: id } } });
  if (archived.data) out.push(extended(archived.data));

  const changed = await client.GET("/changes", { params: { query: { cursor: kept, limit: 10 } } });
  for (const change of changed.data?.items ?? []) {
    const content: string | undefined = change.card?.content;
    out.push(`${change.sequence} ${change.type} ${change.action} ${content ?? change.tag?.name ?? ""}`);
  }

  const marked = await client.POST("/cards/{cardId}/annotations", {
    params: { path: { cardId: id } },
    body: { quote: "later", note: "A note on it.", color: "green" },
  });
  if (marked.data) {
    const start: number | undefined = marked.data.position?.start;
    out.push(`${marked.data.quote ?? ""} ${start ?? "unplaced"} ${marked.data.orphaned}`);
    const listed = await client.GET("/annotations", { params: { query: { cardId: id, color: "green" } } });
    out.push(...(listed.data?.items ?? []).map((a) => a.note ?? ""));
  } else if (marked.error?.code === "QUOTE_NOT_FOUND") {
    out.push(describe(marked.error));
  }
  const annotated = await client.GET("/changes", { params: { query: { cursor: kept, types: ["annotation"] } } });
  for (const change of annotated.data?.items ?? []) out.push(`${change.type} ${change.annotation?.quote ?? ""}`);

  const color: FolderColor | null = "blue";
  const folder = await client.POST("/folders", { body: { name: "Reading list", color } });
  if (folder.data) {
    const added = await client.POST("/folders/{folderId}/cards", {
      params: { path: { folderId: folder.data.id } },
      body: { cardIds: [id] },
    });
    out.push(...(added.data?.failedIds ?? []));
  }

  // A smart folder (its kind a value only a client that makes one meets), shared by link, and a
  // feed followed.
  const smart = await client.POST("/folders", { body: { name: "Smart links", query: "type:link" } });
  if (smart.data) {
    const kind: "manual" | "smart" = smart.data.kind;
    const query: string | null | undefined = smart.data.query;
    out.push(kind, query ?? "");
    const shared = await client.POST("/shares", { body: { folderId: smart.data.id, title: "Links", includeNotes: false } });
    if (shared.data) {
      const links: string[] = [shared.data.url, shared.data.feedUrl, shared.data.jsonFeedUrl];
      out.push(...links.map((link) => link.split("/s/")[0] ?? ""));
      const shareId: string = shared.data.id;
      await client.PATCH("/shares/{shareId}", { params: { path: { shareId } }, body: { expiresAt: null } });
      const listedShares = await client.GET("/shares");
      out.push(...(listedShares.data?.items.map((share) => `${share.id} ${share.folderId ?? ""}`) ?? []));
      await client.DELETE("/shares/{shareId}", { params: { path: { shareId } } });
    }
  }
  const feed = await client.POST("/subscriptions", { body: { url: "https://feeds.example.com/ts.xml" } });
  if (feed.data) {
    const subscriptionId: string = feed.data.id;
    const lastError: string | null = feed.data.lastError;
    out.push(String(feed.data.entriesSaved), lastError ?? "");
    await client.PATCH("/subscriptions/{subscriptionId}", {
      params: { path: { subscriptionId } },
      body: { tags: ["feeds"], folderId: null },
    });
    const polled = await client.GET("/subscriptions/{subscriptionId}", { params: { path: { subscriptionId } } });
    out.push(String(polled.data?.lastPolledAt ?? ""));
    await client.DELETE("/subscriptions/{subscriptionId}", { params: { path: { subscriptionId } } });
  }
  // Shares and subscriptions in the changes feed, asked for by name (a token never among them).
  const sharing = await client.GET("/changes", { params: { query: { cursor: kept, types: ["share", "subscription"] } } });
  for (const change of sharing.data?.items ?? []) {
    const title: string | null | undefined = change.share?.title;
    const saved: number | undefined = change.subscription?.entriesSaved;
    out.push(`${change.type} ${change.action} ${title ?? ""} ${saved ?? ""}`);
  }

  const renamed = await client.POST("/tags/rename", { body: { from: "later", to: "Someday" } });
  if (renamed.error) {
    const running: string | undefined = renamed.error.details?.operationId;
    out.push(running ?? describe(renamed.error));
  } else {
    const operation = await client.GET("/tags/operations/{operationId}", {
      params: { path: { operationId: renamed.data.id } },
    });
    out.push(operation.data?.status ?? "");
  }

  const reader = await client.POST("/api-keys", { body: { name: "dashboard", scopes: ["read"] } });
  if (reader.error) {
    const missing: Scope | undefined = reader.error.details?.scope;
    out.push(missing ?? describe(reader.error));
  } else {
    const secret: string = reader.data.key;
    out.push(keyLabel(reader.data.apiKey), secret.slice(0, 4));
    const listed = await client.GET("/api-keys");
    out.push(...(listed.data?.items.map(keyLabel) ?? []));
    await client.DELETE("/api-keys/{keyId}", { params: { path: { keyId: reader.data.apiKey.id } } });
  }

  const hook = await client.POST("/webhooks", {
    body: { url: "https://hooks.example.com/ts", events: ["card.deleted", "export.ready", "share.deleted", "subscription.updated"] },
  });
  if (hook.data) {
    const secret: string = hook.data.secret;
    const reason: "USER" | "GONE" | "FAILING" | "REVOKED" | null = hook.data.webhook.disabledReason;
    out.push(secret.slice(0, 6), String(reason));
    await client.DELETE("/webhooks/{webhookId}", { params: { path: { webhookId: hook.data.webhook.id } } });
  }

  // Many cards at once: tag the cards a list found, one result per item.
  type BulkItemResult = components["schemas"]["CardBulkItemResult"];
  const found = await client.GET("/cards", { params: { query: { type: ["link", "text"], tag: ["reading"] } } });
  const ids: string[] = found.data?.items.map((item) => item.id) ?? [];
  const tagged = await client.POST("/cards/bulk", {
    params: { header: { "Idempotency-Key": "ts-bulk-tag" } },
    body: { operation: "tag", items: [...ids, "crd_missing"].map((cardId) => ({ cardId, tags: ["later"] })) },
  });
  if (tagged.error) throw new Error(describe(tagged.error));
  const results: BulkItemResult[] = tagged.data.results;
  for (const result of results) {
    const status: number = result.status;
    const failed: ApiError | null = result.error;
    const card: Card | null = result.card;
    out.push(`${result.index} ${status} ${result.cardId ?? ""} ${failed?.code ?? ""} ${card ? title(card) : ""}`);
  }

  const emptied = await client.DELETE("/trash");
  out.push(String(emptied.data?.deletedCount ?? 0));
  return out;
}
