//! `calc`: evaluates an arithmetic expression (`+ - * / %`, parentheses, unary minus, decimals).
//! Pure: it needs no grant at all.

wit_bindgen::generate!({ world: "tool-plugin", path: "../../wit/plugin" });

use airlock::plugin::log::{Level, log};

struct Calc;

#[derive(serde::Deserialize)]
struct Arguments {
    expression: String,
}

impl Guest for Calc {
    fn describe() -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "calc".into(),
            description: "Evaluates an arithmetic expression with + - * / %, parentheses and \
                decimals, e.g. `(2 + 3) * 4.5`."
                .into(),
            parameters: r#"{"type":"object","properties":{"expression":{"type":"string","description":"The expression"}},"required":["expression"]}"#.into(),
            parallel_safe: true,
        }]
    }

    fn call(name: String, arguments: String) -> Result<String, ToolError> {
        if name != "calc" {
            return Err(ToolError::Failed(format!("calc offers no tool {name:?}")));
        }
        let args: Arguments = serde_json::from_str(&arguments).map_err(|e| {
            ToolError::BadArguments(format!("expected {{\"expression\": \"...\"}}: {e}"))
        })?;
        let value = Parser::new(&args.expression).parse().map_err(ToolError::BadArguments)?;
        log(Level::Debug, &format!("{} = {value}", args.expression));
        Ok(serde_json::json!({ "expression": args.expression, "value": value }).to_string())
    }
}

/// A recursive-descent parser over the expression's characters.
struct Parser<'a> {
    chars: std::iter::Peekable<std::str::CharIndices<'a>>,
    text: &'a str,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Self {
        Parser { chars: text.char_indices().peekable(), text }
    }

    fn parse(mut self) -> Result<f64, String> {
        let value = self.sum()?;
        self.skip_spaces();
        match self.chars.peek() {
            None if value.is_finite() => Ok(value),
            None => Err("the result is not a finite number (division by zero?)".into()),
            Some(&(at, c)) => Err(format!("unexpected {c:?} at position {at}")),
        }
    }

    fn skip_spaces(&mut self) {
        while self.chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
    }

    fn eat(&mut self, wanted: char) -> bool {
        self.skip_spaces();
        self.chars.next_if(|&(_, c)| c == wanted).is_some()
    }

    fn sum(&mut self) -> Result<f64, String> {
        let mut value = self.product()?;
        loop {
            if self.eat('+') {
                value += self.product()?;
            } else if self.eat('-') {
                value -= self.product()?;
            } else {
                return Ok(value);
            }
        }
    }

    fn product(&mut self) -> Result<f64, String> {
        let mut value = self.unary()?;
        loop {
            if self.eat('*') {
                value *= self.unary()?;
            } else if self.eat('/') {
                value /= self.unary()?;
            } else if self.eat('%') {
                value %= self.unary()?;
            } else {
                return Ok(value);
            }
        }
    }

    fn unary(&mut self) -> Result<f64, String> {
        if self.eat('-') {
            return Ok(-self.unary()?);
        }
        if self.eat('(') {
            let value = self.sum()?;
            return if self.eat(')') { Ok(value) } else { Err("missing ')'".into()) };
        }
        self.number()
    }

    fn number(&mut self) -> Result<f64, String> {
        self.skip_spaces();
        let start = match self.chars.peek() {
            Some(&(at, c)) if c.is_ascii_digit() || c == '.' => at,
            Some(&(at, c)) => return Err(format!("expected a number at position {at}, found {c:?}")),
            None => return Err("the expression ends where a number should be".into()),
        };
        let mut end = start;
        while let Some((at, c)) = self.chars.next_if(|(_, c)| c.is_ascii_digit() || *c == '.') {
            end = at + c.len_utf8();
        }
        let digits = &self.text[start..end];
        digits.parse().map_err(|_| format!("{digits:?} is not a number"))
    }
}

export!(Calc);
