//! The perpetual-check clause of the Asian rules in solved tables: positions whose defender
//! can avoid mate only by checking for ever, solved under both rule sets.
//!
//! Rule text (the brief's "What the rule texts say", restated in `docs/repetition-rules.md`):
//! "Perpetual check loses, whatever the other side does, unless the other side also checks
//! perpetually"; [ASIA] rule 6: "Under any circumstance, the side that perpetually checks with
//! one piece or several pieces will be ruled as loss" (AXF rule book, chapter 4). So a position in
//! which every move of the side to move either is mated or keeps up a check, while the other
//! side never checks, is lost for the side to move under the Asian rules: a rule loss by
//! perpetual check (`Value::RuleLoss` with `Rule::PerpetualCheck`), and a draw when cycles are
//! draws. The line the table gives from there, played until a position repeats, must be judged
//! the same way by the adjudicator of the rules crate (`xiangqi::repetition::adjudicate`),
//! which shares no code with the solver's rule phase.

use xiangqi::repetition::{Offence, Verdict, adjudicate};
use xiangqi::{Board, Move, parse_fen};
use xqtb_core::{MemoryTables, Probe, Rule, RuleSet, Signature, Value};

fn solved(sig: &str, rules: RuleSet) -> MemoryTables {
    let sig: Signature = sig.parse().unwrap();
    solver::solve_closure_in_memory(&[sig], rules, |_, _| {}).unwrap()
}

fn after(board: &Board, m: Move) -> Board {
    let mut b = board.clone();
    b.make(m);
    b
}

/// Whether `m` checks the opponent.
fn checks(board: &Board, m: Move) -> bool {
    let b = after(board, m);
    b.in_check(b.side_to_move())
}

/// Checks the defender's position `fen` (the defender to move): a rule loss by perpetual check
/// under the Asian rules, a draw when cycles are draws; every move that does not check is lost to a
/// forced mate (an ordinary win for the other side), every check leads to a rule win by perpetual
/// check for the other side. Then plays the table's line (the defender resisting longest, the
/// winner going for the quickest rule win) until a position repeats, and adjudicates it: the
/// defender must lose by perpetual check, every one of its moves in the cycle being a check.
fn assert_forced_perpetual_check(sig: &str, fen: &str) {
    let asian = solved(sig, RuleSet::Asian);
    let cad = solved(sig, RuleSet::CyclesAreDraws);
    let start = parse_fen(fen).unwrap();
    let defender = start.side_to_move();

    assert_eq!(
        cad.probe(RuleSet::CyclesAreDraws, &start).unwrap(),
        Value::Draw
    );
    let v = asian.probe(RuleSet::Asian, &start).unwrap();
    assert!(
        matches!(v, Value::RuleLoss(r) if r.rule == Rule::PerpetualCheck),
        "{fen}: {v:?}"
    );

    let mut some_check = false;
    for &m in start.legal_moves().iter() {
        let b = after(&start, m);
        let w = asian.probe(RuleSet::Asian, &b).unwrap();
        if checks(&start, m) {
            some_check = true;
            assert!(
                matches!(w, Value::Win(_))
                    || matches!(w, Value::RuleWin(r) if r.rule == Rule::PerpetualCheck),
                "{fen}: after the check {m}: {w:?}"
            );
        } else {
            assert!(
                matches!(w, Value::Win(_)),
                "{fen}: after {m}, which does not check: {w:?}"
            );
        }
    }
    assert!(some_check);

    // The table's line, until a position repeats.
    let mut board = start.clone();
    let mut seen = vec![board.clone()];
    let mut moves = Vec::new();
    loop {
        let mut best: Option<(Move, u16)> = None;
        for &m in board.legal_moves().iter() {
            let w = asian.probe(RuleSet::Asian, &after(&board, m)).unwrap();
            let key = match (board.side_to_move() == defender, w) {
                // The defender keeps the rule value, resisting longest.
                (true, Value::RuleWin(r)) if r.rule == Rule::PerpetualCheck => u16::MAX - r.plies,
                // The winner keeps the rule value, taking the quickest.
                (false, Value::RuleLoss(r)) if r.rule == Rule::PerpetualCheck => r.plies,
                _ => continue,
            };
            if best.is_none_or(|(_, k)| key < k) {
                best = Some((m, key));
            }
        }
        let (m, _) = best.unwrap_or_else(|| panic!("no rule move in {}", board.fen()));
        board.make(m);
        moves.push(m);
        if seen.contains(&board) {
            break;
        }
        seen.push(board.clone());
        assert!(moves.len() < 200, "no repetition");
    }
    let a = adjudicate(&start, &moves).unwrap();
    let line: Vec<String> = moves.iter().map(|m| m.iccs()).collect();
    assert_eq!(
        a.verdict,
        Verdict::Loses {
            loser: defender,
            offence: Offence::PerpetualCheck
        },
        "{fen}: line {}",
        line.join(" ")
    );
    println!("{fen}: {}", line.join(" "));
    let winner = defender.opponent();
    assert_eq!(a.offences[winner.index()], Offence::None);
}

/// KRvKN, Black (king e9, horse i4) to move against Red's king f1 and rook d7: the rook threatens
/// mate, and every horse or king move that does not check loses to a forced mate; only i4g3+,
/// followed by more horse checks, avoids mate. The horse must check for ever: Black loses by
/// perpetual check (draw if cycles are draws).
#[test]
fn krkn_the_horse_that_can_only_check_for_ever_loses() {
    assert_forced_perpetual_check("KRvKN", "4k4/9/3R5/9/9/8n/9/9/5K3/9 b");
}

/// KRAvKR, Black (king f7, rook b9) to move against Red's king e0, advisor f2 and rook e4:
/// every black move but the check b9b0 loses to a forced mate, and Black can go on only by
/// checking with the rook for ever: Black loses by perpetual check (draw if cycles are draws).
#[test]
fn kra_kr_the_rook_that_can_only_check_for_ever_loses() {
    assert_forced_perpetual_check("KRAvKR", "1r7/9/5k3/9/9/4R4/9/5A3/9/4K4 b");
}
