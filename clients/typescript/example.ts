// A small front end written against the client generated from openapi/openapi.json: the test
// suite type-checks it (`npm run check`), so a change to the document that breaks generated
// clients, or types too loose to catch a mistake, fails the build.
import createClient from "openapi-fetch";
import type { components, paths } from "./generated/schema";
import { open, subscribe, watchPage, watchQueue, watchVoucher, type Streams } from "./events";

type CheckInReply = components["schemas"]["CheckInReply"];
type NearbyReply = components["schemas"]["NearbyReply"];
type Problem = components["schemas"]["Problem"];

const api = createClient<paths>({ baseUrl: "http://127.0.0.1:8080" });

export async function checkIn(userId: number): Promise<CheckInReply> {
  const { data, error } = await api.POST("/v1/checkins/{user_id}", {
    params: { path: { user_id: userId } },
    body: {},
  });
  if (error) throw new Error(describe(error));
  return data;
}

export async function nearbyCafes(lon: number, lat: number): Promise<string[]> {
  const { data, error } = await api.GET("/v1/geo/{layer}/nearby", {
    params: {
      path: { layer: "cafes" },
      query: { lon, lat, radius: 2, unit: "km", count: 10, order: "asc" },
    },
  });
  if (error) throw new Error(describe(error));
  const reply: NearbyReply = data;
  return reply.results.map((hit) => `${hit.member} (${hit.distance} ${reply.unit})`);
}

export async function buy(voucher: string, userId: number): Promise<string> {
  const { data, error, response } = await api.POST("/v1/seckill/vouchers/{voucher_id}/orders", {
    params: { path: { voucher_id: voucher } },
    body: { user_id: userId },
  });
  if (error) {
    // 409s carry a stable code to switch on.
    if (response.status === 409 && error.code === "sold_out") return "sold out";
    throw new Error(describe(error));
  }
  return data.order_id;
}

// A sale's live view: the status and the stock as they change, until it sells out or ends.
export function showSale(voucher: string, status: HTMLElement, stock: HTMLElement): () => void {
  const close = watchVoucher("http://127.0.0.1:8080", voucher, {
    status: (event) => {
      status.textContent = event.status === "sold_out" ? "sold out" : event.status;
    },
    stock: (event) => {
      stock.textContent = `${event.stock} left, ${event.sold} sold`;
      if (event.status === "sold_out" || event.status === "ended") close();
    },
    // The gateway lost its store: EventSource comes back with the current state once it is back.
    error: (error) => {
      status.textContent = `reconnecting (${error.code})`;
    },
    disconnected: (retrying) => {
      if (!retrying) status.textContent = "unavailable";
    },
  });
  return close;
}

export function showVisitors(page: string, out: HTMLElement): () => void {
  return watchPage("http://127.0.0.1:8080", page, {
    counts: (event, id) => {
      out.textContent = `${event.date}: ${event.uv} visitors, ${event.pv} views (event ${id})`;
    },
  });
}

export function claimWhenReady(queue: string, claim: (ready: number) => void): () => void {
  return watchQueue("http://127.0.0.1:8080", queue, {
    ready: (event) => {
      if (event.ready > 0) claim(event.ready);
    },
  });
}

function describe(problem: Problem): string {
  return `${problem.status} ${problem.code}: ${problem.detail ?? problem.title}`;
}

// The types must be tight enough to catch these mistakes (an unused directive is an error).
export async function mistakes(): Promise<void> {
  // @ts-expect-error user_id is a number, not a string
  await api.POST("/v1/seckill/vouchers/{voucher_id}/orders", { params: { path: { voucher_id: "v" } }, body: { user_id: "7" } });
  // @ts-expect-error there is no such route
  await api.GET("/v1/checkin/{user_id}", { params: { path: { user_id: 1 } } });
}

// The same for the event streams.
export function streamMistakes(): void {
  // @ts-expect-error a voucher's stream sends `stock`, not `stocks`
  watchVoucher("", "v1", { stocks: () => {} });
  // @ts-expect-error `stock` is a number
  watchVoucher("", "v1", { stock: (event) => event.stock.toUpperCase() });
  // @ts-expect-error a page's counts carry no `stock`
  watchPage("", "home", { counts: (event) => event.stock });
  // @ts-expect-error the gateway's error carries a `code`, not a `status`
  watchPage("", "home", { error: (error) => error.status });
  // @ts-expect-error a page's counts are no voucher's state
  subscribe<Streams["/v1/uv/{page}/events"]>("", { counts: (e: { voucher_id: string }) => e });
  // @ts-expect-error the path parameter of a voucher's stream is `voucher_id`
  open("", "/v1/seckill/vouchers/{voucher_id}/events", { voucher: "v1" }, {});
  // @ts-expect-error the orders route is no event stream
  open("", "/v1/seckill/vouchers/{voucher_id}/orders", { voucher_id: "v1" }, {});
}
