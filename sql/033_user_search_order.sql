-- User search in the order of its pages (`GET /v1/users?q=`).
--
-- A page of user search is in the order of `users.sort_name` then id. Each
-- word row now carries its user's `sort_name`, and indexes on the word's
-- first one, two and three characters continue with `(sort_name,
-- user_id)`: a query's first characters are an equality, and the users
-- whose words start with them come out of the index already in page order,
-- from the page's position on. A first page reads about a hundred buffers
-- however many users match, where walking `users_by_sort_name` read every
-- user before the page's last match (see BENCHMARKS.md, "User search at a
-- million users"). `user_words_by_word` stays for a long, rare prefix in a
-- common three-letter bucket, which the planner reads by its range.
--
-- The triggers keep `sort_name` the user's: a word takes it when written,
-- and a change of the name a user shows rewrites it on every word of
-- theirs. Words are written only by a statement that holds the user's row
-- (a profile change, under `FOR UPDATE`; an import, under its update) or
-- that has just inserted it, so no word is written with a name being
-- changed by another transaction.
ALTER TABLE user_words ADD COLUMN sort_name text COLLATE "C";

UPDATE user_words w SET sort_name = u.sort_name FROM users u WHERE u.id = w.user_id;

ALTER TABLE user_words ALTER COLUMN sort_name SET NOT NULL;

CREATE FUNCTION user_words_take_sort_name() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT u.sort_name INTO NEW.sort_name FROM users u WHERE u.id = NEW.user_id;
    RETURN NEW;
END
$$;

CREATE TRIGGER user_words_take_sort_name BEFORE INSERT OR UPDATE OF user_id ON user_words
    FOR EACH ROW EXECUTE FUNCTION user_words_take_sort_name();

CREATE FUNCTION users_give_sort_name() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE user_words SET sort_name = NEW.sort_name WHERE user_id = NEW.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER users_give_sort_name AFTER UPDATE ON users
    FOR EACH ROW WHEN (OLD.sort_name IS DISTINCT FROM NEW.sort_name)
    EXECUTE FUNCTION users_give_sort_name();

CREATE INDEX user_words_by_prefix_1 ON user_words (left(word, 1), sort_name, user_id);
CREATE INDEX user_words_by_prefix_2 ON user_words (left(word, 2), sort_name, user_id);
CREATE INDEX user_words_by_prefix_3 ON user_words (left(word, 3), sort_name, user_id) INCLUDE (word);
