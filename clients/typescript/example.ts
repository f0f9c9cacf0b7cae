// A small front end written against the client generated from openapi/openapi.json: the test
// suite type-checks it (`npm run check`), so a change to the document that breaks generated
// clients, or types too loose to catch a mistake, fails the build.
import createClient from "openapi-fetch";
import type { components, paths } from "./generated/schema";

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
