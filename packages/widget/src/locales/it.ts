import type { Messages } from "../messages.js"

/** Italian. */
const messages: Messages = {
  tabPost: "Lascia un feedback",
  tabUpdates: "Novità",
  tabs: "Feedback",
  formTitle: "Dicci di cosa hai bisogno",
  board: "Bacheca",
  loadingBoards: "Caricamento delle bacheche…",
  noBoards: "Non c’è ancora nessuna bacheca pubblica.",
  boardsFailed: "Impossibile caricare le bacheche.",
  retry: "Riprova",
  title: "Titolo",
  details: "Dettagli (facoltativo)",
  submit: "Invia feedback",
  sending: "Invio in corso…",
  similar: { one: "Esiste già un post simile", many: "Esistono già {count} di post simili", other: "Esistono già {count} post simili" },
  newTab: "(si apre in una nuova scheda)",
  thanks: "Grazie! Il tuo feedback «{title}» è stato pubblicato.",
  sendMore: "Invia un altro feedback",
  pickBoard: "Scegli una bacheca.",
  titleRequired: "Dai un titolo al tuo feedback.",
  fieldInvalid: "Controlla questo campo.",
  loading: "Caricamento…",
  nothingNew: "Ancora nessuna novità.",
  updatesFailed: "Impossibile caricare le novità.",
  unreachable: "Impossibile raggiungere il servizio di feedback da questa pagina.",
  busy: { one: "Il servizio di feedback è sovraccarico. Riprova tra {seconds} secondo.", many: "Il servizio di feedback è sovraccarico. Riprova tra {seconds} di secondi.", other: "Il servizio di feedback è sovraccarico. Riprova tra {seconds} secondi." },
  unauthorized: "Impossibile verificare il tuo accesso. Ricarica la pagina e riprova.",
  notFound: "Questa bacheca non esiste più. Ricarica la pagina e scegline un’altra.",
  checkForm: "Controlla il modulo.",
  failed: "Si è verificato un problema da parte nostra. Riprova."
}
export default messages
