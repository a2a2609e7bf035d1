-- The tally triggers (007) name inbox_tally unqualified, so they resolved it through
-- the search_path of whoever changed the inbox. postroom's own connections put its
-- schema first; an on-call engineer's psql session, or an application sharing the
-- database, does not, and there an UPDATE, DELETE or TRUNCATE of <schema>.inbox
-- failed with 'relation "inbox_tally" does not exist'. Each function now carries
-- the search_path of the schema it lives in. pg_catalog is left implicit, so it is
-- still searched first and no object in the schema can stand in for a built-in;
-- pg_temp goes last, so a temporary table cannot stand in for inbox_tally.
DO $$
DECLARE
  fn text;
  home text;
BEGIN
  FOREACH fn IN ARRAY ARRAY['inbox_tally_apply()', 'inbox_tally_apply_delete()', 'inbox_tally_rebuild()'] LOOP
    SELECT n.nspname INTO home FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE p.oid = fn::regprocedure;
    EXECUTE format('ALTER FUNCTION %I.%s SET search_path = %I, pg_temp', home, fn, home);
  END LOOP;
END
$$;
