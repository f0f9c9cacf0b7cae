//! Check-in routes (docs/api.md "Check-ins").

use axum::extract::State;
use axum::Json;
use chrono::Datelike;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{logic, Calendar, CheckinStore, MAX_STATS_DAYS};
use crate::auth::Acting;
use crate::clock::Clock;
use crate::error::responses::{JsonBody, StoreErrors, Unprocessable, UserAuth};
use crate::error::ApiResult;
use crate::extract::{ApiPath, ApiQuery, NoQuery, OptionalJson};
use crate::middleware::costs::{Query, RouteTerms, Rule};
use crate::state::{AppState, Shared, Slice};
use crate::store::Store;
use crate::types::{Day, Month, UserId};

/// What the check-in routes are handed (`State<CheckinsState>`), made once at start-up.
pub type CheckinsState = Slice<Checkins>;

/// The check-in routes' slice of the state: only what they use.
#[derive(Debug)]
pub struct Checkins {
    store: Store,
    settings: super::Settings,
    clock: Clock,
    tz: chrono_tz::Tz,
}

impl From<&Shared> for Checkins {
    fn from(shared: &Shared) -> Self {
        Self {
            store: shared.store.clone(),
            settings: shared.part::<crate::checkins::Settings>().clone(),
            clock: shared.settings.clock.clone(),
            tz: shared.settings.tz,
        }
    }
}

impl Checkins {
    /// Today in the configured time zone.
    fn today(&self) -> Day {
        crate::calendar::today(&self.clock, self.tz)
    }
}

/// What the composition takes from this domain (`crate::domain::Domain`).
#[derive(Debug)]
pub struct Domain;

impl crate::domain::Domain for Domain {
    type Flags = super::Flags;

    const TAG: Option<(&'static str, &'static str)> =
        Some(("checkins", "Daily check-ins on bitmaps"));
    const TERMS: &'static [crate::middleware::costs::RouteTerms] = TERMS;

    fn router() -> OpenApiRouter<AppState> {
        OpenApiRouter::new()
            .routes(routes!(check_in, month_view))
            .routes(routes!(stats))
            .routes(routes!(day_status))
    }

    fn slice(slices: crate::state::Slices) -> crate::state::Slices {
        slices.slice::<CheckinsState>()
    }
}

/// What these routes cost the global limiter beyond 1 (docs/ratelimit.md "Route costs"): stats read
/// one chunk-day per call, so by the days of the range.
pub const TERMS: &[RouteTerms] = &[RouteTerms::new(
    "GET",
    "/v1/checkins/stats",
    Rule::Query(stats_cost),
    "1 + days / 8",
)];

fn stats_cost(q: &Query<'_>) -> u64 {
    1 + q.days() / 8
}

/// Optional body of a check-in.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
// A whole example without `date`: a fixed day is refused once it leaves the retention, and
// the date Swagger UI fills in by itself (today in UTC) can be tomorrow in a time zone behind
// UTC.
#[schema(example = json!({}))]
struct CheckInBody {
    /// The day to check in for (default: today in the configured time zone).
    #[schema(value_type = Option<String>, format = Date)]
    date: Option<Day>,
}

#[derive(Debug, Serialize, ToSchema)]
struct CheckInReply {
    #[schema(value_type = i64, minimum = 0, maximum = 4294967295_i64)]
    user_id: u32,
    #[schema(value_type = String, format = Date)]
    date: Day,
    /// True when the user was already checked in for that day (nothing changed).
    already_checked_in: bool,
    /// Days checked in during that date's month.
    month_count: u32,
    /// Consecutive days ending today (or yesterday, if today is not checked in yet).
    current_streak: u32,
}

/// Check a user in for a day (idempotent).
///
/// The body is optional: none, `{}` or `{"date": "YYYY-MM-DD"}`. A future date, or one older
/// than the retention, is 422.
#[utoipa::path(
    post, path = "/v1/checkins/{user_id}", operation_id = "checkIn",
    params(("user_id" = i64, Path, minimum = 0, maximum = 4294967295_i64, description = "User id, 0..=4294967295", example = 42)),
    request_body(content = Option<CheckInBody>, content_type = "application/json"),
    responses(JsonBody, UserAuth, Unprocessable, (status = 200, body = CheckInReply))
)]
async fn check_in(
    State(state): State<CheckinsState>,
    acting: Acting,
    ApiPath(user): ApiPath<UserId>,
    _: NoQuery,
    OptionalJson(body): OptionalJson<CheckInBody>,
) -> ApiResult<Json<CheckInReply>> {
    acting.for_user(user)?;
    let cal = Calendar::at(state.today(), state.settings.retention_days);
    let day = body.date.unwrap_or(cal.retention.today);
    cal.retention.writable(day)?;
    let done = state.store.checkin_record(user, day, &cal).await?;
    Ok(Json(CheckInReply {
        user_id: user.0,
        date: day,
        already_checked_in: done.already,
        month_count: done.month_count,
        current_streak: done.current_streak,
    }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct MonthQuery {
    /// `YYYY-MM` (default: this month).
    #[param(value_type = Option<String>, example = "2026-11")]
    month: Option<Month>,
}

#[derive(Debug, Serialize, ToSchema)]
struct MonthView {
    #[schema(value_type = i64, minimum = 0, maximum = 4294967295_i64)]
    user_id: u32,
    #[schema(value_type = String, example = "2026-11")]
    month: Month,
    /// Days of the month checked in, ascending.
    days: Vec<u32>,
    count: u32,
    /// First day checked in this month, or null.
    first_day: Option<u32>,
    /// Longest run of consecutive days within this month.
    longest_streak: u32,
    /// Consecutive days ending today (or yesterday); the same whichever month is viewed.
    current_streak: u32,
}

/// A user's calendar and streaks for one month.
#[utoipa::path(
    get, path = "/v1/checkins/{user_id}", operation_id = "checkinMonth",
    params(("user_id" = i64, Path, minimum = 0, maximum = 4294967295_i64, description = "User id, 0..=4294967295", example = 42), MonthQuery),
    responses(UserAuth, (status = 200, body = MonthView), StoreErrors)
)]
async fn month_view(
    State(state): State<CheckinsState>,
    acting: Acting,
    ApiPath(user): ApiPath<UserId>,
    ApiQuery(q): ApiQuery<MonthQuery>,
) -> ApiResult<Json<MonthView>> {
    acting.for_user(user)?;
    let cal = Calendar::at(state.today(), state.settings.retention_days);
    let month = q.month.unwrap_or(cal.retention.today.month());
    let mut months = cal.window();
    let index = months.iter().position(|m| *m == month).unwrap_or_else(|| {
        months.push(month);
        months.len() - 1
    });
    let masks = state.store.checkin_months(user, &months).await?;
    let n = masks.len().min(cal.window().len());
    let mask = masks[index];
    let days = logic::days(mask, month.days());
    Ok(Json(MonthView {
        user_id: user.0,
        month,
        count: days.len() as u32,
        first_day: days.first().copied(),
        days,
        longest_streak: logic::longest_streak(mask, month.days()),
        current_streak: cal.current_streak(&months[..n], &masks[..n]),
    }))
}

#[derive(Debug, Serialize, ToSchema)]
#[schema(as = CheckinDayStatus)]
struct DayStatus {
    #[schema(value_type = i64, minimum = 0, maximum = 4294967295_i64)]
    user_id: u32,
    #[schema(value_type = String, format = Date)]
    date: Day,
    checked_in: bool,
}

/// Whether a user checked in on one day.
#[utoipa::path(
    get, path = "/v1/checkins/{user_id}/{date}", operation_id = "checkinDay",
    params(
        ("user_id" = i64, Path, minimum = 0, maximum = 4294967295_i64, description = "User id, 0..=4294967295", example = 42),
        ("date" = String, Path, format = Date, description = "YYYY-MM-DD", example = "2026-11-21"),
    ),
    responses(UserAuth, (status = 200, body = DayStatus), StoreErrors)
)]
async fn day_status(
    State(state): State<CheckinsState>,
    acting: Acting,
    ApiPath((user, date)): ApiPath<(UserId, Day)>,
    _: NoQuery,
) -> ApiResult<Json<DayStatus>> {
    acting.for_user(user)?;
    let mask = state.store.checkin_months(user, &[date.month()]).await?[0];
    let checked_in = logic::days(mask, date.month().days()).contains(&date.0.day());
    Ok(Json(DayStatus {
        user_id: user.0,
        date,
        checked_in,
    }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct StatsQuery {
    /// First day, inclusive.
    #[param(value_type = String, format = Date, example = "2026-11-01")]
    from: Day,
    /// Last day, inclusive; at most 92 days after `from`.
    #[param(value_type = String, format = Date, example = "2026-11-30")]
    to: Day,
}

#[derive(Debug, Serialize, ToSchema)]
#[schema(as = CheckinDailyCount)]
struct DailyCount {
    #[schema(value_type = String, format = Date)]
    date: Day,
    count: u64,
}

#[derive(Debug, Serialize, ToSchema)]
#[schema(as = CheckinStats)]
struct Stats {
    #[schema(value_type = String, format = Date)]
    from: Day,
    #[schema(value_type = String, format = Date)]
    to: Day,
    daily: Vec<DailyCount>,
    /// Users checked in on every day of the range.
    every_day: u64,
    /// Users checked in on at least one day of the range.
    any_day: u64,
}

/// Daily active counts and cohort counts (AND / OR) over a range of at most 92 days.
#[utoipa::path(
    get, path = "/v1/checkins/stats", operation_id = "checkinStats",
    params(StatsQuery),
    responses((status = 200, body = Stats), StoreErrors)
)]
async fn stats(
    State(state): State<CheckinsState>,
    ApiQuery(q): ApiQuery<StatsQuery>,
) -> ApiResult<Json<Stats>> {
    let days = crate::calendar::days_between(q.from, q.to, MAX_STATS_DAYS)?;
    let cohort = state.store.checkin_cohort(&days).await?;
    Ok(Json(Stats {
        from: q.from,
        to: q.to,
        daily: days
            .iter()
            .zip(&cohort.daily)
            .map(|(d, c)| DailyCount {
                date: *d,
                count: *c,
            })
            .collect(),
        every_day: cohort.every_day,
        any_day: cohort.any_day,
    }))
}
