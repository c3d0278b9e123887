-- The booleans are columns of type BOOLEAN: json_build_object writes them as JSON booleans.
UPDATE jobs SET data = json_build_object(
    'payload', payload,
    'checkDuplicate', check_duplicate,
    'matchAccount', match_account,
    'matchAmount', match_amount,
    'remark', remark)::text;
