-- A participant's latest act as the service last showed it wins a tie of instants.
--
-- The projection keeps a participant's latest act: the later `at` wins, and at the
-- same instant the greater event id (src/projection/sort-order.ts). Two acts can
-- share a millisecond, and the service's event ids are opaque, so the id says
-- nothing about which came last. When the read model's act and the one a re-read
-- shows have the same instant but differ, the reconciler writes the re-read's act
-- (src/reconciler/synthetic.ts); it must then win that tie, whatever the ids, or
-- the projection would keep differing from the service while its gap read as
-- recovered. This flag marks an act that came from a re-read; it breaks ties of
-- instants only, so a later act still replaces it. A NOT NULL column with a
-- constant default rewrites nothing.
ALTER TABLE participant_projection
  ADD COLUMN last_act_reread boolean NOT NULL DEFAULT false;
