import type { Messages } from "../messages.js"

/** Hebrew. */
const messages: Messages = {
  tabPost: "שליחת משוב",
  tabUpdates: "עדכונים",
  tabs: "משוב",
  formTitle: "ספרו לנו מה אתם צריכים",
  board: "לוח",
  loadingBoards: "הלוחות בטעינה…",
  noBoards: "עדיין אין לוח ציבורי.",
  boardsFailed: "לא ניתן לטעון את הלוחות.",
  retry: "לנסות שוב",
  title: "כותרת",
  details: "פרטים (אופציונלי)",
  submit: "שליחת המשוב",
  sending: "בשליחה…",
  similar: { one: "כבר קיים פוסט דומה", two: "כבר קיימים שני פוסטים דומים", other: "כבר קיימים {count} פוסטים דומים" },
  newTab: "(נפתח בכרטיסייה חדשה)",
  thanks: "תודה! המשוב שלך \"{title}\" פורסם.",
  sendMore: "שליחת משוב נוסף",
  pickBoard: "יש לבחור לוח.",
  titleRequired: "יש לתת כותרת למשוב.",
  fieldInvalid: "יש לבדוק את השדה הזה.",
  loading: "בטעינה…",
  nothingNew: "אין עדיין עדכונים.",
  updatesFailed: "לא ניתן לטעון את העדכונים.",
  unreachable: "לא ניתן להתחבר לשירות המשוב מהדף הזה.",
  busy: { one: "שירות המשוב עמוס כרגע. יש לנסות שוב בעוד שנייה.", two: "שירות המשוב עמוס כרגע. יש לנסות שוב בעוד שתי שניות.", other: "שירות המשוב עמוס כרגע. יש לנסות שוב בעוד {seconds} שניות." },
  unauthorized: "לא ניתן לאמת את ההתחברות שלך. יש לטעון מחדש את הדף ולנסות שוב.",
  notFound: "הלוח הזה כבר לא קיים. יש לטעון מחדש את הדף ולבחור לוח אחר.",
  checkForm: "יש לבדוק את הטופס.",
  failed: "משהו השתבש אצלנו. יש לנסות שוב."
}
export default messages
