-- Routers are named within their AS; the ID-INT node id is optional (a scionproto
-- topology.json names its border routers but gives them no node id) and, where known,
-- unique within the AS. Interfaces name the router that owns them.
UPDATE router SET name = 'node-' || node_id WHERE name = '';
ALTER TABLE router DROP CONSTRAINT router_pkey;
ALTER TABLE router ALTER COLUMN node_id DROP NOT NULL;
ALTER TABLE router ADD PRIMARY KEY (ia, name);
CREATE UNIQUE INDEX router_node_id ON router (ia, node_id);
ALTER TABLE interface ADD COLUMN router TEXT;
UPDATE interface i SET router = r.name FROM router r WHERE r.ia = i.ia AND r.node_id = i.node_id;
