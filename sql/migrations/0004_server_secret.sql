-- Secrets every node of the cluster shares without configuration (e.g. the key that signs paging links).
create table server_secret (
  name  text primary key,
  value text not null
);
