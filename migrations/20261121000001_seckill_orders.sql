-- The order ledger: every flash-sale order, exactly once (the gateway ingests them from the
-- vouchers' Redis streams; see src/ledger/).
CREATE TABLE seckill_orders (
    -- `<voucher_id>/<stream entry id>`, as the purchase returned it.
    order_id    text        PRIMARY KEY,
    voucher_id  text        NOT NULL,
    user_id     bigint      NOT NULL CHECK (user_id BETWEEN 0 AND 4294967295),
    -- The user's n-th order of this voucher (1..=per_user_limit).
    nth         integer     NOT NULL CHECK (nth >= 1),
    -- The store's time of the sale.
    created_at  timestamptz NOT NULL,
    ingested_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (voucher_id, user_id, nth)
);

CREATE INDEX seckill_orders_by_voucher ON seckill_orders (voucher_id, created_at);
