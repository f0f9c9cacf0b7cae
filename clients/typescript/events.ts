// Typed subscriptions to the gateway's server-sent event streams (docs/events.md), over the
// browser's EventSource. The stream paths, their path parameters and every payload come from
// the client generated from openapi/openapi.json, so a renamed route, field or schema fails the
// type-check instead of a page at run time.
import type { components, paths } from "./generated/schema";

type Schemas = components["schemas"];

/** Each stream of the gateway by its route: the events it sends, by name, with their payloads. */
export interface Streams {
  "/v1/seckill/vouchers/{voucher_id}/events": {
    status: Schemas["StatusEvent"];
    stock: Schemas["StockEvent"];
  };
  "/v1/uv/{page}/events": { counts: Schemas["CountsEvent"] };
  "/v1/queues/{queue}/events": { ready: Schemas["ReadyEvent"] };
}

/** What the gateway says in `event: error` before it ends a stream (its store was lost). */
export interface StreamError {
  code: "backend_unavailable" | (string & {});
}

/**
 * A handler per event name (each optional), and the two kinds of trouble, kept apart because
 * they call for different things on a page:
 * - `error`: the gateway's own `event: error`; the stream then ends and EventSource reconnects
 *   after the stream's `retry` (a second), getting the current state once the store is back;
 * - `disconnected`: EventSource's connection error (an event without data). `retrying` is true
 *   when it reconnects by itself (a dropped connection, a stream that ended), false when it gave
 *   up: an answer that is no event stream (`404` unknown voucher, `429 too_many_streams`, a
 *   refused CORS request), after which only a new subscription tries again.
 */
export type Handlers<E> = {
  [K in keyof E]?: (payload: E[K], id: string) => void;
} & {
  error?: (error: StreamError) => void;
  disconnected?: (retrying: boolean) => void;
};

/** Opens `url` as an event stream with typed handlers; returns what closes it. */
export function subscribe<E extends object>(
  url: string,
  handlers: Handlers<E>,
  init?: EventSourceInit,
): () => void {
  const source = new EventSource(url, init);
  for (const name of Object.keys(handlers)) {
    if (name === "error" || name === "disconnected") continue;
    const handle = handlers[name as keyof E] as
      | ((payload: unknown, id: string) => void)
      | undefined;
    source.addEventListener(name, (event) => {
      const message = event as MessageEvent<string>;
      handle?.(JSON.parse(message.data), message.lastEventId);
    });
  }
  // Both kinds of trouble arrive as `error`: the gateway's carries data (a MessageEvent),
  // EventSource's own is a bare Event.
  source.addEventListener("error", (event) => {
    if (event instanceof MessageEvent) {
      handlers.error?.(JSON.parse(event.data as string) as StreamError);
    } else {
      handlers.disconnected?.(source.readyState !== EventSource.CLOSED);
    }
  });
  return () => source.close();
}

// Indexing `paths` is also the check that every stream above is a route of the document.
type PathParams<P extends keyof Streams> = paths[P]["get"]["parameters"]["path"];

/** The URL of stream `path` on the gateway at `base` (e.g. `https://api.example`). */
export function streamUrl<P extends keyof Streams>(
  base: string,
  path: P,
  params: PathParams<P>,
): string {
  const values = params as Record<string, string>;
  const filled = path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(values[name]));
  return base.replace(/\/$/, "") + filled;
}

/** Opens stream `path` of the gateway at `base` with its parameters and typed handlers. */
export function open<P extends keyof Streams>(
  base: string,
  path: P,
  params: PathParams<P>,
  handlers: Handlers<Streams[P]>,
): () => void {
  return subscribe<Streams[P]>(streamUrl(base, path, params), handlers);
}

/** A voucher's sale: `status` when it begins, ends or sells out; `stock` on each change. */
export function watchVoucher(
  base: string,
  voucherId: string,
  handlers: Handlers<Streams["/v1/seckill/vouchers/{voucher_id}/events"]>,
): () => void {
  const path = "/v1/seckill/vouchers/{voucher_id}/events";
  return open(base, path, { voucher_id: voucherId }, handlers);
}

/** A page's visitors and views today. */
export function watchPage(
  base: string,
  page: string,
  handlers: Handlers<Streams["/v1/uv/{page}/events"]>,
): () => void {
  return open(base, "/v1/uv/{page}/events", { page }, handlers);
}

/**
 * A queue's jobs due now. A page cannot add headers to an EventSource, so it sends no
 * `X-Api-Key`: without a clients file every caller shares one namespace; with one, a page may
 * open it only under `GATEWAY_ANONYMOUS_BACKEND_ROUTES=on`, in its address's namespace.
 */
export function watchQueue(
  base: string,
  queue: string,
  handlers: Handlers<Streams["/v1/queues/{queue}/events"]>,
): () => void {
  return open(base, "/v1/queues/{queue}/events", { queue }, handlers);
}
