-- Topology of the ID-INT collector: what it imported (topology.json, path descriptions) and
-- learned from verified reports. ISD-AS numbers are stored as their 64-bit integer form.
CREATE TABLE isd_as (
    ia          BIGINT PRIMARY KEY,
    core        BOOLEAN NOT NULL DEFAULT false,
    mtu         INTEGER,
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE router (
    ia       BIGINT NOT NULL REFERENCES isd_as (ia) ON DELETE CASCADE,
    node_id  BIGINT NOT NULL,
    name     TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (ia, node_id)
);

CREATE TABLE interface (
    ia             BIGINT NOT NULL REFERENCES isd_as (ia) ON DELETE CASCADE,
    ifid           INTEGER NOT NULL,
    node_id        BIGINT,
    link_type      TEXT NOT NULL DEFAULT '',
    neighbor_ia    BIGINT,
    neighbor_ifid  INTEGER,
    PRIMARY KEY (ia, ifid)
);

-- Inter-AS links, one row per direction-independent pair (a < b by (ia, ifid)).
CREATE TABLE link (
    a_ia    BIGINT NOT NULL,
    a_ifid  INTEGER NOT NULL,
    b_ia    BIGINT NOT NULL,
    b_ifid  INTEGER NOT NULL,
    PRIMARY KEY (a_ia, a_ifid, b_ia, b_ifid)
);

-- AS-internal router-to-router links inferred from consecutive telemetry entries.
CREATE TABLE internal_link (
    ia         BIGINT NOT NULL,
    from_node  BIGINT NOT NULL,
    to_node    BIGINT NOT NULL,
    PRIMARY KEY (ia, from_node, to_node)
);

CREATE TABLE path (
    fingerprint    BIGINT PRIMARY KEY,
    src_ia         BIGINT NOT NULL,
    dst_ia         BIGINT NOT NULL,
    first_seen_ns  BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE path_hop (
    fingerprint  BIGINT NOT NULL REFERENCES path (fingerprint) ON DELETE CASCADE,
    idx          INTEGER NOT NULL,
    ia           BIGINT NOT NULL,
    ingress      INTEGER NOT NULL,
    egress       INTEGER NOT NULL,
    PRIMARY KEY (fingerprint, idx)
);

-- Paths seen in reports that could not be mapped to ASes (recorded, never guessed).
CREATE TABLE unknown_path (
    fingerprint    BIGINT PRIMARY KEY,
    detail         TEXT NOT NULL,
    first_seen_ns  BIGINT NOT NULL
);

-- Rejected reports with the reason, bounded (oldest rows deleted beyond the cap).
CREATE TABLE quarantine (
    id           BIGSERIAL PRIMARY KEY,
    received_ns  BIGINT NOT NULL,
    reason       TEXT NOT NULL,
    detail       TEXT NOT NULL,
    report       BYTEA NOT NULL
);
