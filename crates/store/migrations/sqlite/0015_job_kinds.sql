-- The booleans are stored as 0/1: json() turns them into JSON booleans.
UPDATE jobs SET data = json_object(
    'payload', payload,
    'checkDuplicate', json(CASE WHEN check_duplicate THEN 'true' ELSE 'false' END),
    'matchAccount', json(CASE WHEN match_account THEN 'true' ELSE 'false' END),
    'matchAmount', match_amount,
    'remark', remark);
