-- The results a transaction job records (bundle_job.results, tens of kilobytes of JSON per Bundle) are
-- compressed with lz4 where the server has it, as resource contents are (0016): pglz took about 2 µs of
-- PostgreSQL's CPU per ingested resource on synthea-smart, in the transaction's commit path.
do $$
begin
  if exists (select 1 from pg_settings where name = 'default_toast_compression' and 'lz4' = any(enumvals)) then
    alter table bundle_job alter column results set compression lz4;
  end if;
end
$$;
