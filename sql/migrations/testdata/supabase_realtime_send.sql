-- Test fixture: realtime.send as section 5.7 of the research describes it
-- (sets realtime.topic, inserts a broadcast row, turns errors into a warning).
create function realtime.send(payload jsonb, event text, topic text, private boolean default true) returns void
language plpgsql as $$
begin
  perform set_config('realtime.topic', topic, true);
  insert into realtime.messages (payload, event, topic, private, extension)
  values (payload, event, topic, private, 'broadcast');
exception when others then
  raise warning 'ErrorSendingBroadcastMessage: %', sqlerrm;
end
$$;
