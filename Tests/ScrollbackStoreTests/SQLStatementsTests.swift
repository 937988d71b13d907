@testable import ScrollbackStore
import Testing

@Suite struct SQLStatementsTests {
    @Test func splitsOnSemicolonsOutsideQuotesCommentsAndDollarBodies() {
        let sql = """
            -- a comment; with a semicolon
            CREATE TABLE a (x text DEFAULT 'semi;colon', "odd;name" int);
            /* block; /* nested; */ still comment; */
            CREATE FUNCTION f() RETURNS int AS $body$ SELECT 1; $body$ LANGUAGE sql;
            DO $$ BEGIN PERFORM 1; END $$;
            SELECT 'it''s; fine'
            """
        let statements = SQLStatements.split(sql)
        #expect(statements.count == 4)
        #expect(statements[0].hasSuffix(#"CREATE TABLE a (x text DEFAULT 'semi;colon', "odd;name" int)"#))
        #expect(statements[1].contains("$body$ SELECT 1; $body$ LANGUAGE sql"))
        #expect(statements[2] == "DO $$ BEGIN PERFORM 1; END $$")
        #expect(statements[3] == "SELECT 'it''s; fine'")
    }

    @Test func dropsEmptyAndCommentOnlyPieces() {
        #expect(SQLStatements.split(";;  ;\n-- nothing\n").isEmpty)
        #expect(SQLStatements.split("SELECT $1;") == ["SELECT $1"])
    }
}
